-- claims.lockTask: lockTaskSQL of package claims, as Store.Cancel, Store.Requeue and Store.Compensate send it (2 parameters); go test ./claims -run TestGoldenSQL -update rewrites this file
/* claims.lockTask */
SELECT 1 FROM tasks WHERE id = $1 AND ($2 = '' OR tenant = $2) FOR UPDATE
