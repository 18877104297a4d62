package client_test

import (
	"testing"

	"github.com/caskade/caskade/client"
)

// TestReturnedBytesAreTheCallers: the bytes of a reply are the caller's
// (doc.go), so changing those of one +OK must not change the next.
func TestReturnedBytesAreTheCallers(t *testing.T) {
	ts := startCaskade(t, nil)
	c := dial(t, ts.addr, nil)
	ctx := testCtx(t)
	b := must[[]byte](t)(must[client.Value](t)(c.Do(ctx, "SET", "ob:k", "v")).Bytes())
	b[0] = 'N'
	v := must[client.Value](t)(c.Do(ctx, "SET", "ob:k", "v"))
	eq(t, "second OK", v.String(), "OK")
	eq(t, "IsOK", v.IsOK(), true)
}
