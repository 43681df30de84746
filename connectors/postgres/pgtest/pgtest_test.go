package pgtest

import (
	"strings"
	"testing"
)

// The server starts, takes connections over TCP with the password, and
// psql reaches it.
func TestStart(t *testing.T) {
	s := Start(t)
	url := s.CreateDatabase(t, "d1")
	if !strings.Contains(url, "/d1?") {
		t.Errorf("url %s", url)
	}
	s.Exec(t, "d1", "CREATE TABLE x (a int); INSERT INTO x VALUES (1), (2)")
	out, err := s.Psql("d1", "-At", "-c", "SELECT sum(a) FROM x")
	if err != nil || strings.TrimSpace(out) != "3" {
		t.Fatalf("psql: %q %v", out, err)
	}
	out, err = s.Psql("d1", "-At", "-c", "SHOW max_prepared_transactions")
	if err != nil || strings.TrimSpace(out) != "20" {
		t.Fatalf("max_prepared_transactions: %q %v", out, err)
	}
	if s.Version < 100000 {
		t.Errorf("version %d", s.Version)
	}
}

func TestNoPrepared(t *testing.T) {
	s := StartWith(t, Config{MaxPreparedTransactions: -1})
	out, err := s.Psql("postgres", "-At", "-c", "SHOW max_prepared_transactions")
	if err != nil || strings.TrimSpace(out) != "0" {
		t.Fatalf("max_prepared_transactions: %q %v", out, err)
	}
}
