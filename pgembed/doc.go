// Package pgembed runs a private PostgreSQL cluster from the server binaries
// already installed on the machine; it never downloads anything.
//
// The cluster lives in a state directory (see [DefaultStateDir]) laid out as:
//
//	pgdata/          the data directory (mode 0700)
//	log/postgres.log the server log
//	conn.json        host, port, user, password and database (mode 0600)
//	start.lock       serialises initialisation, start and stop
//	users.lock       one shared flock per live [Cluster]: the reference count
//	server.lock      flocked by the server's processes while they live
//
// [Start] initialises the cluster on first use (superuser and database
// "agentledger", scram-sha-256 authentication, a random password), starts the
// server when it is not already running, and registers the calling process as
// a user. [Cluster.Close] unregisters and stops the server only when no other
// process still uses it. Because flock locks disappear when a process dies, a
// killed user never pins the cluster: the next [Start] reuses the server it
// left running and the last [Cluster.Close] stops it.
//
// A state directory shared across PID namespaces (two containers on one
// volume) is refused with [ErrStateDirInUse]: there the other container's
// postmaster has a pid this process cannot see, but it holds server.lock
// (or answers on the port in postmaster.pid).
//
// The server listens on a loopback TCP port only (no Unix socket). When the
// caller is root the server runs as an unprivileged user ("postgres" by
// default), since PostgreSQL refuses to run as root.
package pgembed
