package client

import (
	"github.com/caskade/caskade/resp"
)

// maxPrealloc is the largest bulk length for which the reply buffer is
// allocated at its declared size up front; longer ones grow as data arrives.
const maxPrealloc = 1 << 20

// result is the outcome of one command: a value, or the server's error.
type result struct {
	val Value
	err error // a server error reply (*Error), ErrTxFailed, or a connection error
}

// readResult reads one complete reply into res. It returns an error only
// for a failure of the stream (network or protocol); a server error reply
// is stored in res.err. Scalars are read through the header API with at most
// one allocation (a bulk string's bytes); aggregates through ReadValue and
// own (two allocations).
func readResult(rd *resp.Reader, res *result) error {
	k, err := rd.PeekKind()
	if err != nil {
		return err
	}
	switch k {
	case resp.KindBulk, resp.KindSimpleString, resp.KindInt, resp.KindNull,
		resp.KindError, resp.KindBlobError, resp.KindDouble, resp.KindBool:
		h, err := rd.ReadHeader()
		if err != nil {
			return err
		}
		return readScalar(rd, h, res)
	}
	v, err := rd.ReadValue()
	if err != nil {
		return err
	}
	res.val = own(v)
	if e := res.val.Err(); e != nil {
		res.val, res.err = Value{}, e
	}
	return nil
}

// readScalar completes a reply whose header h was read.
func readScalar(rd *resp.Reader, h resp.Header, res *result) error {
	switch h.Kind {
	case resp.KindBulk:
		if h.Len < 0 && h.Len != resp.StreamedLen {
			res.val = Value{kind: resp.KindNull}
			return nil
		}
		var dst []byte
		switch {
		case h.Len == 0:
			dst = emptyBytes
		case h.Len > 0 && h.Len <= maxPrealloc:
			dst = make([]byte, 0, h.Len)
		}
		b, err := rd.ReadBlob(dst)
		if err != nil {
			return err
		}
		if b == nil {
			b = emptyBytes
		}
		res.val = bulkValue(b)
	case resp.KindSimpleString:
		if string(h.Line) == "OK" {
			res.val = simpleValue(okBytes)
		} else {
			res.val = simpleValue(append([]byte(nil), h.Line...))
		}
	case resp.KindInt:
		res.val = intValue(h.Int)
	case resp.KindNull:
		res.val = Value{kind: resp.KindNull}
	case resp.KindError:
		res.err = parseError(string(h.Line))
	case resp.KindBlobError:
		b, err := rd.ReadBlob(nil)
		if err != nil {
			return err
		}
		res.err = parseError(string(b))
	case resp.KindDouble:
		res.val = Value{kind: resp.KindDouble}
		res.val.num = int64(floatBits(h.Float))
	case resp.KindBool:
		res.val = Value{kind: resp.KindBool}
		if h.Bool {
			res.val.num = 1
		}
	}
	return nil
}

// readStatus reads a reply that should be a simple status (+OK, +QUEUED)
// without allocating, returning the server error if it is one.
func readStatus(rd *resp.Reader) (error, error) {
	k, err := rd.PeekKind()
	if err != nil {
		return nil, err
	}
	if k != resp.KindSimpleString && k != resp.KindError {
		var res result
		if err := readResult(rd, &res); err != nil {
			return nil, err
		}
		return res.err, nil
	}
	h, err := rd.ReadHeader()
	if err != nil {
		return nil, err
	}
	if h.Kind == resp.KindError {
		return parseError(string(h.Line)), nil
	}
	return nil, nil
}
