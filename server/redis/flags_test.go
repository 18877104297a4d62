package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/caskade/caskade"
	goredis "github.com/redis/go-redis/v9"
)

// TestMemcachedFlagsAcrossCommands: memcached client flags are stored
// beside the value (caskade.SetOptions.Flags). A Redis command that
// changes a value in place, its expiry or its key keeps them, as
// memcached's append, incr and touch do, whether it runs on its own,
// inside MULTI/EXEC or with CLIENT TRACKING on; one that sets a new value
// clears them, as a memcached set without flags does.
func TestMemcachedFlagsAcrossCommands(t *testing.T) {
	ts := startServer(t, nil)
	ctx := context.Background()
	tests := []struct {
		cmd   string
		key   string // where the item is afterwards
		flags uint32
	}{
		{"APPEND f x", "f", 7},
		{"SETRANGE f 0 9", "f", 7},
		{"INCR f", "f", 7},
		{"DECRBY f 3", "f", 7},
		{"INCRBYFLOAT f 1.5", "f", 7},
		{"EXPIRE f 500", "f", 7},
		{"PEXPIREAT f 99999999999999", "f", 7},
		{"PERSIST f", "f", 7},
		{"GETEX f EX 100", "f", 7},
		{"GETEX f PERSIST", "f", 7},
		{"RENAME f g", "g", 7},
		{"RENAMENX f g", "g", 7},
		{"COPY f g", "g", 7},
		{"MOVE f 1", "\xff\x01f", 7},
		{"SWAPDB 0 2", "\xff\x02f", 7},
		{"SET f 1", "f", 0},
		{"SET f 1 KEEPTTL", "f", 0},
		{"GETSET f 1", "f", 0},
		{"MSET f 1", "f", 0},
	}
	for _, mode := range []string{"alone", "multi", "tracking"} {
		opts := &goredis.Options{}
		if mode == "tracking" {
			opts.Protocol = 3
			opts.OnConnect = func(ctx context.Context, cn *goredis.Conn) error {
				return cn.Do(ctx, "CLIENT", "TRACKING", "ON").Err()
			}
		}
		rdb := ts.goRedis(opts)
		for _, tc := range tests {
			if err := ts.db.DeleteRange(nil, nil); err != nil {
				t.Fatal(err)
			}
			// As memcached's "set f 7 1000 2" stores it.
			if err := ts.db.SetEntry([]byte("f"), []byte("10"), caskade.SetOptions{ExpiresAt: time.Now().Add(1000 * time.Second), Flags: 7}); err != nil {
				t.Fatal(err)
			}
			var args []any
			for _, a := range strings.Fields(tc.cmd) {
				args = append(args, a)
			}
			var err error
			if mode == "multi" {
				_, err = rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
					p.Do(ctx, args...)
					return nil
				})
			} else {
				err = rdb.Do(ctx, args...).Err()
			}
			if err != nil {
				t.Fatalf("%s %s: %v", mode, tc.cmd, err)
			}
			_, info, err := ts.db.Lookup([]byte(tc.key))
			if err != nil {
				t.Fatalf("%s %s: lookup %q: %v", mode, tc.cmd, tc.key, err)
			}
			if info.Flags != tc.flags {
				t.Errorf("%s %s: flags %d, want %d", mode, tc.cmd, info.Flags, tc.flags)
			}
		}
	}
}
