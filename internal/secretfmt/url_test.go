package secretfmt

import (
	"strings"
	"testing"
)

// Every shape of a URL holding a password, the malformed ones included
// (they are what an error reports), comes out masked.
func TestURLMasksThePassword(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://bob:s3cret@db:5432/app?sslmode=disable":                           "postgres://bob:xxxxx@db:5432/app?sslmode=disable",
		"postgres://bob@db/app":                                                       "postgres://bob@db/app",
		"postgres://db/app":                                                           "postgres://db/app",
		"host=db user=bob password=s3cret dbname=app":                                 "host=db user=bob password=xxxxx dbname=app",
		"host=db password='s3cret with spaces' dbname=app":                            "host=db password=xxxxx dbname=app",
		"postgres://bob:s3cret@db1:5432,db2:5432/app?target_session_attrs=read-write": "postgres://bob:xxxxx@db1:5432,db2:5432/app?target_session_attrs=read-write",
		"bob:s3cret@localhost:5432/db":                                                "bob:xxxxx@localhost:5432/db",
		"postgres://bob:s3cret@PW@localhost:5x/db":                                    "postgres://bob:xxxxx@localhost:5x/db",
		"postgres://bob:s3/cret@db/app":                                               "postgres://bob:xxxxx@db/app",
		"postgres://localhost/db?password=s3cret&port=abc":                            "postgres://localhost/db?password=xxxxx&port=abc",
		"postgres://localhost/db?sslpassword=s3cret":                                  "postgres://localhost/db?sslpassword=xxxxx",
		"user:s3cret@localhost:8080/v1":                                               "user:xxxxx@localhost:8080/v1",
		"https://api.example/v1?api-key=s3cret":                                       "https://api.example/v1?api-key=xxxxx",
		"http://127.0.0.1:8080/v1":                                                    "http://127.0.0.1:8080/v1",
		"localhost:8080/v1":                                                           "localhost:8080/v1",
		"postgres://u:s3?cret@db.example.com/app":                                     "postgres://u:xxxxx@db.example.com/app",
		"postgres://u:p@ss?w0rd@db/app?password=s3cret":                               "postgres://u:xxxxx@db/app?password=xxxxx",
		"https://u:s3?cret@api.example.com/v1":                                        "https://u:xxxxx@api.example.com/v1",
		"postgres://db/app?password=p@ss":                                             "postgres://db/app?password=xxxxx",
		"postgres://db.example.com/app?user=bob@myserver&password=s3cret":             "postgres://db.example.com/app?user=bob@myserver&password=xxxxx",
		"postgres://127.0.0.1:1/app?application_name=ops@host1&password=s3cret":       "postgres://127.0.0.1:1/app?application_name=ops@host1&password=xxxxx",
		"api.example/v1?key=p@ss":                                                     "api.example/v1?key=xxxxx",
		"host=127.0.0.1 port=1 password=abc\\ s3cret":                                 "host=127.0.0.1 port=1 password=xxxxx",
		"host=db password='my s3cret":                                                 "host=db password=xxxxx",
		"host=db password=\"s3 cret\"":                                                "host=db password=xxxxx",
		"host=db port=x password=s3cret application_name=https://svc":                 "host=db port=x password=xxxxx application_name=https://svc",
		"postgres://bob:s3cret":                                                       "postgres://bob:xxxxx",
		"postgres://db/app?pass%77ord=s3cret":                                         "postgres://db/app?pass%77ord=xxxxx",
		"https://fn.example/api?code=s3cret":                                          "https://fn.example/api?code=xxxxx",
		"postgres://bob:s3cret@[::1]:5432/app":                                        "postgres://bob:xxxxx@[::1]:5432/app",
		"postgres:///app?host=/var/run/postgresql&password=s3cret":                    "postgres:///app?host=/var/run/postgresql&password=xxxxx",
		"postgres://bob:s3%40cret@db/app":                                             "postgres://bob:xxxxx@db/app",
	} {
		if got := URL(in); got != want || strings.Contains(got, "s3cret") || strings.Contains(got, "PW") || strings.Contains(got, "cret") || strings.Contains(got, "w0rd") || strings.Contains(got, "p@ss") || strings.Contains(got, "@ss") {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
