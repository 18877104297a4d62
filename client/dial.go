package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/caskade/caskade/resp"
)

// parseAddr splits a Dial address into a network and an address.
func parseAddr(addr string) (network, address string, err error) {
	if path, ok := cutPrefixFold(addr, "unix://"); ok {
		if path == "" {
			return "", "", errors.New("client: empty unix socket path")
		}
		return "unix", path, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", "", err
	}
	return "tcp", addr, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) {
		return s, false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return s, false
		}
	}
	return s[len(prefix):], true
}

// dialHandshake opens a connection and runs the handshake: HELLO 3 (with
// AUTH and SETNAME) or, for RESP2, AUTH and CLIENT SETNAME; then SELECT.
// It returns the connection, its reader and the protocol in use. Errors are
// *ConnError with Op "dial" or "handshake"; a handshake refused by the
// server wraps the server's *Error.
func (c *Client) dialHandshake(ctx context.Context) (net.Conn, *resp.Reader, int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opt.DialTimeout)
	defer cancel()
	nc, err := c.dialNet(ctx)
	if err != nil {
		return nil, nil, 0, &ConnError{Op: "dial", Addr: c.addr, Err: err}
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	rd := resp.NewReader(nc, nil)
	proto, err := c.handshake(nc, rd)
	if !stop() && err == nil {
		// The context ended as the handshake finished: the past deadline
		// is being set, maybe after the one cleared below. Give the
		// connection up rather than hand it out with a dead deadline.
		err = ctx.Err()
	}
	if err != nil {
		nc.Close()
		if ctx.Err() != nil && !isServerError(err) {
			err = ctx.Err()
		}
		return nil, nil, 0, &ConnError{Op: "handshake", Addr: c.addr, Err: err}
	}
	nc.SetDeadline(time.Time{})
	return nc, rd, proto, nil
}

func (c *Client) dialNet(ctx context.Context) (net.Conn, error) {
	var nc net.Conn
	var err error
	if c.opt.Dialer != nil {
		nc, err = c.opt.Dialer(ctx, c.network, c.address)
	} else {
		d := net.Dialer{KeepAlive: 30 * time.Second}
		nc, err = d.DialContext(ctx, c.network, c.address)
	}
	if err != nil {
		return nil, err
	}
	if c.opt.TLSConfig != nil {
		cfg := c.opt.TLSConfig
		if cfg.ServerName == "" && c.network == "tcp" {
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(c.address)
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = tc
	}
	return nc, nil
}

// isServerError reports whether err is (or wraps) a server error reply.
func isServerError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// helloRefused reports whether a HELLO error means the server does not
// speak RESP3 (rather than, say, a wrong password).
func helloRefused(e *Error) bool {
	return e.Prefix == "NOPROTO" || errors.Is(e, ErrUnknownCommand) ||
		e.Prefix == "ERR" && len(e.Msg) >= 6 && e.Msg[:6] == "Syntax"
}

func (c *Client) handshake(nc net.Conn, rd *resp.Reader) (int, error) {
	user := c.opt.Username
	if user == "" {
		user = "default"
	}
	proto := 2
	if c.opt.Protocol == 3 && !c.noHello.Load() {
		args := []string{"HELLO", "3"}
		if c.opt.Password != "" {
			args = append(args, "AUTH", user, c.opt.Password)
		}
		if c.opt.ClientName != "" {
			args = append(args, "SETNAME", c.opt.ClientName)
		}
		res, err := exchange(nc, rd, [][]string{args})
		if err != nil {
			return 0, err
		}
		if e, ok := res[0].err.(*Error); ok {
			if !helloRefused(e) || c.strictProto {
				return 0, e
			}
			c.noHello.Store(true) // later dials go straight to RESP2
		} else if res[0].err != nil {
			return 0, res[0].err
		} else {
			proto = 3
		}
	}
	var cmds [][]string
	if proto == 2 && c.opt.Password != "" {
		if c.opt.Username != "" {
			cmds = append(cmds, []string{"AUTH", c.opt.Username, c.opt.Password})
		} else {
			cmds = append(cmds, []string{"AUTH", c.opt.Password})
		}
	}
	if proto == 2 && c.opt.ClientName != "" {
		cmds = append(cmds, []string{"CLIENT", "SETNAME", c.opt.ClientName})
	}
	if c.opt.DB != 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(c.opt.DB)})
	}
	if len(cmds) == 0 {
		return proto, nil
	}
	res, err := exchange(nc, rd, cmds)
	if err != nil {
		return 0, err
	}
	for _, r := range res {
		if r.err != nil {
			return 0, r.err
		}
	}
	return proto, nil
}

// exchange writes commands in one write and reads their replies.
func exchange(nc net.Conn, rd *resp.Reader, cmds [][]string) ([]result, error) {
	var b []byte
	for _, c := range cmds {
		b = resp.AppendCommandString(b, c...)
	}
	if _, err := nc.Write(b); err != nil {
		return nil, err
	}
	res := make([]result, len(cmds))
	for i := range res {
		if err := readResult(rd, &res[i]); err != nil {
			return nil, err
		}
	}
	return res, nil
}
