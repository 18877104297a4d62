package client

import (
	"context"
	"fmt"
	"strconv"
)

// ScanIterator walks the keys of the database with SCAN, pull-style:
//
//	it := c.Scan(ctx, "user:*", 100)
//	for it.Next(ctx) {
//		use(it.Key())
//	}
//	if err := it.Err(); err != nil { ... }
//
// As with SCAN, a key present during the whole scan is returned at least
// once; a key may be returned more than once. A ScanIterator is not safe for
// concurrent use.
type ScanIterator struct {
	c      *Client
	match  string
	count  int
	cursor string
	keys   [][]byte
	pos    int
	key    []byte
	err    error
	ended  bool
}

// Scan returns an iterator over the keys matching the glob pattern match
// (every key if empty), fetching about count keys per SCAN (the server's
// default if count <= 0). It sends nothing until Next; ctx is not kept.
func (c *Client) Scan(ctx context.Context, match string, count int) *ScanIterator {
	return &ScanIterator{c: c, match: match, count: count, cursor: "0"}
}

// Next moves to the next key, fetching a page from the server when needed.
// It returns false at the end or on an error (see Err).
func (it *ScanIterator) Next(ctx context.Context) bool {
	for {
		if it.err != nil {
			return false
		}
		if it.pos < len(it.keys) {
			it.key = it.keys[it.pos]
			it.pos++
			return true
		}
		if it.ended {
			it.key = nil
			return false
		}
		it.fetch(ctx)
	}
}

func (it *ScanIterator) fetch(ctx context.Context) {
	args := []any{"SCAN", it.cursor}
	if it.match != "" {
		args = append(args, "MATCH", it.match)
	}
	if it.count > 0 {
		args = append(args, "COUNT", strconv.Itoa(it.count))
	}
	v, err := it.c.Do(ctx, args...)
	if err != nil {
		it.err = err
		return
	}
	elems, err := v.Array()
	if err != nil || len(elems) != 2 {
		it.err = fmt.Errorf("%w: SCAN reply %v", ErrUnexpectedReply, v)
		return
	}
	if it.cursor, err = elems[0].Str(); err != nil {
		it.err = err
		return
	}
	keys, err := elems[1].Array()
	if err != nil {
		it.err = err
		return
	}
	it.keys = it.keys[:0]
	for _, k := range keys {
		b, err := k.Bytes()
		if err != nil {
			it.err = err
			return
		}
		it.keys = append(it.keys, b)
	}
	it.pos = 0
	it.ended = it.cursor == "0"
}

// Key returns the current key. The slice is the caller's.
func (it *ScanIterator) Key() []byte { return it.key }

// Err returns the error that stopped the iteration, if any.
func (it *ScanIterator) Err() error { return it.err }
