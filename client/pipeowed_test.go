package client_test

import (
	"errors"
	"testing"

	"github.com/caskade/caskade/client"
)

// TestConnPipelineWithRepliesOwed: a pipeline run on a Conn while replies
// to commands sent with Append are owed must not take those replies as
// its own (and leave its own to Receive); it fails with ErrPendingReplies,
// as Conn.Do does.
func TestConnPipelineWithRepliesOwed(t *testing.T) {
	ts := startCaskade(t, nil)
	c := dial(t, ts.addr, nil)
	ctx := testCtx(t)
	must[[]byte](t)(c.Set(ctx, "po:a", []byte("a"), client.SetArgs{}))
	must[[]byte](t)(c.Set(ctx, "po:b", []byte("b"), client.SetArgs{}))
	cn := must[*client.Conn](t)(c.Conn(ctx))
	defer cn.Close()
	for _, flush := range []bool{true, false} {
		check(t, cn.Append("GET", "po:a"))
		if flush {
			check(t, cn.Flush(ctx))
		}
		for name, run := range map[string]func() ([]*client.Cmd, error){
			"Pipelined": func() ([]*client.Cmd, error) {
				return cn.Pipelined(ctx, func(p *client.Pipe) error { p.Get("po:b"); return nil })
			},
			"TxPipelined": func() ([]*client.Cmd, error) {
				return cn.TxPipelined(ctx, func(p *client.Pipe) error { p.Get("po:b"); return nil })
			},
			"Pipeline().Exec": func() ([]*client.Cmd, error) {
				p := cn.Pipeline()
				p.Get("po:b")
				return p.Exec(ctx)
			},
		} {
			cmds, err := run()
			if !errors.Is(err, client.ErrPendingReplies) {
				v, _ := cmds[0].Str()
				t.Fatalf("flush %v: %s with a reply owed: %q, %v; want ErrPendingReplies", flush, name, v, err)
			}
		}
		eq(t, "owed reply", must[string](t)(must[client.Value](t)(cn.Receive(ctx)).Str()), "a")
		if _, err := cn.Receive(ctx); !errors.Is(err, client.ErrNoReply) {
			t.Fatalf("Receive after the owed reply: %v", err)
		}
	}
}
