package redis

import (
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caskade/caskade"
)

// DBSIZE of database 0 counts its own keys only: a key of another
// database that expired, but that active expiry has not dropped yet, is
// not one of them. (Database 0's count is the total minus the others', and
// the total counts such keys.)
func TestDbsizeIgnoresOtherDatabasesExpiredKeys(t *testing.T) {
	var skew atomic.Int64 // the database's clock runs ahead by this much
	ts := startServerOpts(t, &caskade.Options{Sync: caskade.SyncNone, ExpiryPeriod: -1,
		Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	c := ts.dial()
	c.do(cmd("SET", "a", "1"), "+OK\r\n")
	c.do(cmd("SELECT", "1"), "+OK\r\n")
	c.do(cmd("SET", "b", "1", "EX", "10"), "+OK\r\n")
	c.do(cmd("SET", "c", "1"), "+OK\r\n")
	c.do(cmd("DBSIZE"), ":2\r\n")
	c.do(cmd("SELECT", "0"), "+OK\r\n")
	skew.Store(int64(time.Minute)) // b has expired; nothing dropped it
	c.do(cmd("DBSIZE"), ":1\r\n")
	if n := ts.db.Stats().Keys; n != 3 {
		t.Fatalf("%d keys in the key directory, want 3 (the test needs b expired, not dropped)", n)
	}
	// (INFO's listing of database 1 may drop b as it passes it.)
	c.send(cmd("INFO", "keyspace"))
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(c.readLine(), "$")))
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(c.br, body); err != nil {
		t.Fatal(err)
	}
	info := string(body)
	if !strings.Contains(info, "db0:keys=1,expires=0,") {
		t.Fatalf("INFO keyspace counts another database's expired key in database 0:\n%s", info)
	}
}
