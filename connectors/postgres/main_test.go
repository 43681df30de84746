package postgres

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/clink-dev/clink/connectors/postgres/pgtest"
)

// The tests of this package share one server (initdb takes a second);
// each test works in a database of its own.
var (
	serverOnce sync.Once
	server     *pgtest.Server
	serverErr  error
	databases  atomic.Int64
)

func TestMain(m *testing.M) {
	code := m.Run()
	if server != nil {
		server.Stop()
	}
	os.Exit(code)
}

// SharedDatabase returns the shared server and a new database on it (its
// name and URL); it skips t without PostgreSQL (see pgtest).
func SharedDatabase(t testing.TB) (*pgtest.Server, string, string) {
	t.Helper()
	serverOnce.Do(func() { server, serverErr = pgtest.Launch(pgtest.Config{}) })
	if serverErr != nil {
		pgtest.SkipOrFail(t, serverErr)
	}
	name := fmt.Sprintf("t%d", databases.Add(1))
	return server, name, server.CreateDatabase(t, name)
}
