-- claims.lockTask: claims.LockTaskSQL, as Service.Cancel, Service.Retry, Service.RerunAnyway and Service.CompensateBy send it (2 parameters); go test ./operator -run TestGoldenSQL -update rewrites this file
/* claims.lockTask */
SELECT 1 FROM tasks WHERE id = $1 AND ($2 = '' OR tenant = $2) FOR UPDATE
