package render

import "testing"

func TestBriefError(t *testing.T) {
	for in, want := range map[string]string{
		`step 0 (http_request) failed: http_request: POST http://127.0.0.1:7476/fail4xx/1: 400 Bad Request: {"error":"no"}`: `step 0 (http_request) failed: 400 Bad Request: {"error":"no"}`,
		`at tool/0: step 0 (unsafe_http): unsafe_http: POST http://x/legacy: 502 Bad Gateway: effect outcome unknown`:       `at tool/0: step 0 (unsafe_http): 502 Bad Gateway: effect outcome unknown`,
		`step 1 (notify): create_task: boom`: `step 1 (notify): create_task: boom`,
		`handler panicked: nil map`:          `handler panicked: nil map`,
	} {
		if got := BriefError(in); got != want {
			t.Errorf("BriefError(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
