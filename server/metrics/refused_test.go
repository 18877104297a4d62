package metrics

import (
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// caskade_db_writes_refused is 1 from a write refused for lack of space
// until a write goes through, so that a full disk can be alerted on before
// clients report it.
func TestWritesRefusedGauge(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db, err := caskade.Open("/db", &caskade.Options{FS: efs, Sync: caskade.SyncAlways, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m := New(db)
	scrape := func(want string) {
		t.Helper()
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if !strings.Contains(rec.Body.String(), want) {
			t.Fatalf("scrape lacks %q", want)
		}
	}
	scrape("caskade_db_writes_refused 0\n")
	efs.Inject(errorfs.OpWrite, syscall.ENOSPC)
	if err := db.Set([]byte("k"), []byte("v")); err == nil {
		t.Fatal("a write on a full disk succeeded")
	}
	scrape("caskade_db_writes_refused 1\n")
	scrape("caskade_db_writes_stopped 0\n")
	efs.Inject(errorfs.OpWrite, nil)
	if err := db.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	scrape("caskade_db_writes_refused 0\n")
}
