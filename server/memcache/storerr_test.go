package memcache

import (
	"log/slog"
	"strings"
	"syscall"
	"testing"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/internal/wiretest"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// TestNoSpaceReplies fills the disk under a server and checks that the
// writes of the text and meta protocols are refused with a SERVER_ERROR
// that names no file of the server, that the log has the cause with the
// file, and that writes go on once there is room.
func TestNoSpaceReplies(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db, err := caskade.Open("/srv/db", &caskade.Options{FS: efs, Sync: caskade.SyncAlways, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	logs := &wiretest.LogBuffer{}
	ts := startServerDB(t, db, false, func(s *Server) { s.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	c := ts.dial(t)
	c.do("set before 0 0 1\r\n7\r\n", "STORED\r\n")
	efs.Inject(errorfs.OpWrite, syscall.ENOSPC)
	const full = "SERVER_ERROR no space left on device"
	// A plain set (deferred into a group commit), add, incr, a meta set
	// and a delete.
	c.do("set a 0 0 1\r\nx\r\nadd b 0 0 1\r\ny\r\nincr before 1\r\nms c 1\r\nz\r\ndelete before\r\nget a before\r\n",
		lines(full, full, full, full, full, "VALUE before 0 1", "7", "END"))
	if l := logs.String(); !strings.Contains(l, "/srv/db/") || !strings.Contains(l, "no space left on device") {
		t.Errorf("the log lacks the cause with its file:\n%s", l)
	}
	// Quiet sets ended by mn, committed with mn in their run: a quiet
	// meta set's failure is reported, before MN; a noreply set's is not.
	c.do("ms q1 1 q\r\nz\r\nset q2 0 0 1 noreply\r\nz\r\nmn\r\nmg q1 v\r\n", lines(full, "MN", "EN"))
	efs.Inject(errorfs.OpWrite, nil)
	c.do("set a 0 0 1\r\nx\r\n", "STORED\r\n")
	c.do("ms q1 1 q\r\nz\r\nset q2 0 0 1 noreply\r\nz\r\nmn\r\nmg q1 v\r\nmg q2 v\r\n", lines("MN", "VA 1", "z", "VA 1", "z"))
}
