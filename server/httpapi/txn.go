package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/caskade/caskade"
)

// txnRequest is the body of POST /v1/txn, in the shape of etcd's Txn:
// if every compare holds, the success operations run, else the failure
// ones; all of it is one serializable transaction.
type txnRequest struct {
	Compare []txnCompare `json:"compare"`
	Success []txnOp      `json:"success"`
	Failure []txnOp      `json:"failure"`
}

// txnCompare is one precondition. Target "version" compares the key's
// commit version (0 if absent) with Version; "value" compares its value
// with Value (an absent key's value equals nothing and differs from
// everything); "exists" compares its presence with Exists (== or !=).
type txnCompare struct {
	Key      string  `json:"key"`
	KeyB64   bool    `json:"key_b64"`
	Target   string  `json:"target"`
	Result   string  `json:"result"`
	Version  *uint64 `json:"version"`
	Value    *string `json:"value"`
	ValueB64 bool    `json:"value_b64"`
	Exists   *bool   `json:"exists"`
}

// txnOp is one operation: exactly one of its fields is set.
type txnOp struct {
	Put    *txnPut   `json:"put"`
	Delete *txnRange `json:"delete"`
	Get    *txnKey   `json:"get"`
	Range  *txnRange `json:"range"`
}

type txnKey struct {
	Key    string `json:"key"`
	KeyB64 bool   `json:"key_b64"`
}

// txnPut sets a key, optionally with a TTL in seconds or an expiry time
// (Unix seconds) and 32-bit client flags.
type txnPut struct {
	Key       string `json:"key"`
	KeyB64    bool   `json:"key_b64"`
	Value     string `json:"value"`
	ValueB64  bool   `json:"value_b64"`
	TTL       int64  `json:"ttl"`
	ExpiresAt int64  `json:"expires_at"`
	Flags     uint32 `json:"flags"`
}

// options returns the put's expiry and flags.
func (p *txnPut) options(now time.Time) caskade.SetOptions {
	o := caskade.SetOptions{Flags: p.Flags}
	switch {
	case p.TTL > 0:
		o.ExpiresAt = now.Add(time.Duration(p.TTL) * time.Second)
	case p.ExpiresAt > 0:
		o.ExpiresAt = time.Unix(p.ExpiresAt, 0)
	}
	return o
}

// txnRange names a key, or with Prefix the keys starting with Key, or
// with RangeEnd the keys in [Key, RangeEnd) (RangeEnd "\u0000": to the
// end of the key space).
type txnRange struct {
	Key         string     `json:"key"`
	KeyB64      bool       `json:"key_b64"`
	RangeEnd    string     `json:"range_end"`
	RangeEndB64 bool       `json:"range_end_b64"`
	Prefix      bool       `json:"prefix"`
	Limit       rangeLimit `json:"limit"`
	Reverse     bool       `json:"reverse"`
	KeysOnly    bool       `json:"keys_only"`
}

// rangeLimit is a range's limit: a JSON integer, where one past the int
// range is taken as the largest int (then reduced to MaxListLimit, as
// every limit above it), not refused.
type rangeLimit int

func (l *rangeLimit) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	n, err := strconv.Atoi(string(b))
	if errors.Is(err, strconv.ErrRange) && n > 0 {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("limit %s: want an integer", b)
	}
	*l = rangeLimit(n)
	return nil
}

// txnResponse is the reply of POST /v1/txn.
type txnResponse struct {
	Succeeded bool           `json:"succeeded"`
	Version   uint64         `json:"version"`
	Responses []txnResponse1 `json:"responses"`
}

type txnResponse1 struct {
	Put    *struct{}       `json:"put,omitempty"`
	Delete *txnDeleteReply `json:"delete,omitempty"`
	Get    *txnGetReply    `json:"get,omitempty"`
	Range  *txnRangeReply  `json:"range,omitempty"`
}

type txnDeleteReply struct {
	Deleted int `json:"deleted"`
}

type txnGetReply struct {
	Found    bool    `json:"found"`
	Key      string  `json:"key"`
	KeyB64   bool    `json:"key_b64,omitempty"`
	Value    *string `json:"value,omitempty"`
	ValueB64 bool    `json:"value_b64,omitempty"`
	// Version is the key's version before the transaction (0 if it was
	// written earlier in the same transaction or is absent).
	Version uint64 `json:"version,omitempty"`
}

type txnRangeReply struct {
	Items []item `json:"items"`
	More  bool   `json:"more"`
}

// errBadTxn is a malformed transaction request.
type errBadTxn struct{ msg string }

func (e *errBadTxn) Error() string { return e.msg }

func badTxn(format string, a ...any) error { return &errBadTxn{fmt.Sprintf(format, a...)} }

func decodeField(s string, b64 bool, what string) ([]byte, error) {
	if !b64 {
		return []byte(s), nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, badTxn("%s: bad base64", what)
	}
	return b, nil
}

func decodeKey(s string, b64 bool) ([]byte, error) {
	k, err := decodeField(s, b64, "key")
	if err != nil {
		return nil, err
	}
	if len(k) == 0 {
		return nil, badTxn("empty key")
	}
	if k[0] == 0xff {
		return nil, badTxn("keys starting with the byte 0xff are reserved")
	}
	return k, nil
}

// bounds returns the [lo, hi) of a range operation (hi nil: a single key).
func (o *txnRange) bounds() (lo, hi []byte, err error) {
	lo, err = decodeKey(o.Key, o.KeyB64)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case o.Prefix && o.RangeEnd != "":
		return nil, nil, badTxn("give prefix or range_end, not both")
	case o.Prefix:
		hi = caskade.PrefixEnd(lo)
	case o.RangeEnd != "":
		hi, err = decodeField(o.RangeEnd, o.RangeEndB64, "range_end")
		if err != nil {
			return nil, nil, err
		}
		if bytes.Equal(hi, []byte{0}) {
			hi = nil
		}
		if hi != nil && bytes.Compare(hi, lo) < 0 {
			return nil, nil, badTxn("range_end before key")
		}
	default:
		return lo, nil, nil
	}
	if hi == nil || bytes.Compare(hi, reservedStart) > 0 {
		hi = reservedStart
	}
	return lo, hi, nil
}

func (o *txnOp) validate() error {
	n := 0
	if o.Put != nil {
		n++
		if _, err := decodeKey(o.Put.Key, o.Put.KeyB64); err != nil {
			return err
		}
		if _, err := decodeField(o.Put.Value, o.Put.ValueB64, "value"); err != nil {
			return err
		}
		switch p := o.Put; {
		case p.TTL < 0 || p.TTL > maxTTL:
			return badTxn("ttl must be a positive number of seconds")
		case p.ExpiresAt < 0 || p.ExpiresAt > maxExpiresAt:
			return badTxn("expires_at must be a Unix time in seconds before the year 10000")
		case p.TTL > 0 && p.ExpiresAt > 0:
			return badTxn("give ttl or expires_at, not both")
		}
	}
	if o.Get != nil {
		n++
		if _, err := decodeKey(o.Get.Key, o.Get.KeyB64); err != nil {
			return err
		}
	}
	for _, rg := range []*txnRange{o.Delete, o.Range} {
		if rg != nil {
			n++
			if _, _, err := rg.bounds(); err != nil {
				return err
			}
			if rg.Limit < 0 {
				return badTxn("negative limit")
			}
		}
	}
	if n != 1 {
		return badTxn("each operation needs exactly one of put, delete, get, range")
	}
	return nil
}

func (c *txnCompare) validate() error {
	if _, err := decodeKey(c.Key, c.KeyB64); err != nil {
		return err
	}
	switch c.Result {
	case "==", "!=", ">", "<", ">=", "<=":
	case "EQUAL", "NOT_EQUAL", "GREATER", "LESS":
	default:
		return badTxn("compare result %q: want ==, !=, <, >, <= or >=", c.Result)
	}
	switch c.Target {
	case "version":
		if c.Version == nil {
			return badTxn("compare on version needs \"version\"")
		}
	case "value":
		if c.Value == nil {
			return badTxn("compare on value needs \"value\"")
		}
		if _, err := decodeField(*c.Value, c.ValueB64, "value"); err != nil {
			return err
		}
	case "exists":
		if c.Exists == nil {
			return badTxn("compare on exists needs \"exists\"")
		}
		if c.Result != "==" && c.Result != "!=" && c.Result != "EQUAL" && c.Result != "NOT_EQUAL" {
			return badTxn("compare on exists takes == or !=")
		}
	default:
		return badTxn("compare target %q: want version, value or exists", c.Target)
	}
	return nil
}

// holds applies a comparison result to an ordering (-1, 0, 1).
func holds(result string, cmp int) bool {
	switch result {
	case "==", "EQUAL":
		return cmp == 0
	case "!=", "NOT_EQUAL":
		return cmp != 0
	case ">", "GREATER":
		return cmp > 0
	case "<", "LESS":
		return cmp < 0
	case ">=":
		return cmp >= 0
	case "<=":
		return cmp <= 0
	}
	return false
}

// txnRun is one attempt of a transaction.
type txnRun struct {
	s       *Server
	tx      *caskade.Tx
	written [][2][]byte // ranges written so far ([lo, hi), hi nil: one key)
	reply   int         // bytes of the keys and values read for the reply so far
}

// errReplyTooLarge fails a transaction whose reply would hold more than
// maxTxnReply bytes of keys and values.
var errReplyTooLarge = errors.New("reply too large")

// maxTxnReply is MaxTxnReplyBytes (tests lower it).
var maxTxnReply = MaxTxnReplyBytes

// charge counts the JSON strings of a key and value read for the reply
// against maxTxnReply.
func (t *txnRun) charge(strs ...string) error {
	for _, s := range strs {
		t.reply += jsonStringLen(s)
	}
	if t.reply > maxTxnReply {
		return errReplyTooLarge
	}
	return nil
}

// jsonStringLen bounds the length of s encoded as a JSON string by
// encoding/json: quotes, two bytes for the short escapes and six for
// \uXXXX ones (control characters, <, >, &, U+2028 and U+2029).
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 6
		case c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && s[i+2]&^1 == 0xa8:
			n += 6
			i += 2
		default:
			n++
		}
	}
	return n
}

// version returns key's commit version as of the transaction's read
// version (0 if absent), adding a read conflict on the key. The engine's
// Tx has no Stat, so whether the key exists is read from the
// transaction's snapshot and its version from the key directory: a key
// the snapshot holds that is gone from the directory, or is there at a
// version newer than the read version, changed since, and the attempt is
// retried. A read-write transaction would fail its commit on the read
// conflict anyway, but a read-only one commits without a check, so
// answering 0 for a key deleted after the read version would let
// "version == 0" hold while a get in the same transaction finds the key.
func (t *txnRun) version(key []byte) (uint64, error) {
	t.tx.AddReadConflictKey(key)
	_, err := t.tx.Snapshot().Get(key)
	if errors.Is(err, caskade.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	info, err := t.s.DB.Stat(key)
	if errors.Is(err, caskade.ErrNotFound) {
		return 0, caskade.ErrConflict
	}
	if err != nil {
		return 0, err
	}
	if info.Version > t.tx.ReadVersion() {
		return 0, caskade.ErrConflict
	}
	return info.Version, nil
}

func (t *txnRun) wroteKey(key []byte) bool {
	for _, w := range t.written {
		if w[1] == nil {
			if bytes.Equal(w[0], key) {
				return true
			}
		} else if bytes.Compare(key, w[0]) >= 0 && bytes.Compare(key, w[1]) < 0 {
			return true
		}
	}
	return false
}

func (t *txnRun) compare(c *txnCompare) (bool, error) {
	key, _ := decodeKey(c.Key, c.KeyB64)
	switch c.Target {
	case "version":
		v, err := t.version(key)
		if err != nil {
			return false, err
		}
		switch {
		case v < *c.Version:
			return holds(c.Result, -1), nil
		case v > *c.Version:
			return holds(c.Result, 1), nil
		}
		return holds(c.Result, 0), nil
	case "value":
		want, _ := decodeField(*c.Value, c.ValueB64, "value")
		got, err := t.tx.Get(key)
		if errors.Is(err, caskade.ErrNotFound) {
			return c.Result == "!=" || c.Result == "NOT_EQUAL", nil
		}
		if err != nil {
			return false, err
		}
		return holds(c.Result, bytes.Compare(got, want)), nil
	default: // exists
		_, err := t.tx.Get(key)
		if err != nil && !errors.Is(err, caskade.ErrNotFound) {
			return false, err
		}
		same := (err == nil) == *c.Exists
		return same == (c.Result == "==" || c.Result == "EQUAL"), nil
	}
}

func (t *txnRun) op(o *txnOp) (txnResponse1, error) {
	tx := t.tx
	switch {
	case o.Put != nil:
		key, _ := decodeKey(o.Put.Key, o.Put.KeyB64)
		val, _ := decodeField(o.Put.Value, o.Put.ValueB64, "value")
		tx.SetEntry(key, val, o.Put.options(time.Now()))
		t.written = append(t.written, [2][]byte{key, nil})
		return txnResponse1{Put: &struct{}{}}, nil
	case o.Get != nil:
		key, _ := decodeKey(o.Get.Key, o.Get.KeyB64)
		rep := &txnGetReply{}
		rep.Key, rep.KeyB64 = encodeBytes(key)
		val, err := tx.Get(key)
		if errors.Is(err, caskade.ErrNotFound) {
			return txnResponse1{Get: rep}, nil
		}
		if err != nil {
			return txnResponse1{}, err
		}
		rep.Found = true
		sv, b64 := encodeBytes(val)
		rep.Value, rep.ValueB64 = &sv, b64
		if err := t.charge(rep.Key, sv); err != nil {
			return txnResponse1{}, err
		}
		if !t.wroteKey(key) {
			if rep.Version, err = t.version(key); err != nil {
				return txnResponse1{}, err
			}
		}
		return txnResponse1{Get: rep}, nil
	case o.Delete != nil:
		lo, hi, _ := o.Delete.bounds()
		if hi == nil {
			_, err := tx.Get(lo)
			if err != nil && !errors.Is(err, caskade.ErrNotFound) {
				return txnResponse1{}, err
			}
			n := 0
			if err == nil {
				n = 1
			}
			tx.Clear(lo)
			t.written = append(t.written, [2][]byte{lo, nil})
			return txnResponse1{Delete: &txnDeleteReply{Deleted: n}}, nil
		}
		// Counted without holding the keys: the range may be large.
		n := 0
		it := tx.KeyRangeIterator(lo, hi, &caskade.RangeOptions{KeysOnly: true})
		for it.Next() {
			n++
		}
		if err := it.Err(); err != nil {
			return txnResponse1{}, err
		}
		tx.ClearRange(lo, hi)
		t.written = append(t.written, [2][]byte{lo, hi})
		return txnResponse1{Delete: &txnDeleteReply{Deleted: n}}, nil
	default: // range
		rg := o.Range
		lo, hi, _ := rg.bounds()
		if hi == nil {
			hi = append(bytes.Clone(lo), 0)
		}
		limit := int(rg.Limit)
		if limit == 0 || limit > MaxListLimit {
			limit = MaxListLimit
		}
		// Read pair by pair, so that a range whose values exceed the
		// reply's budget fails before they are all in memory.
		it := tx.KeyRangeIterator(lo, hi, &caskade.RangeOptions{Limit: limit + 1, Reverse: rg.Reverse, KeysOnly: rg.KeysOnly})
		rep := &txnRangeReply{Items: []item{}}
		for it.Next() {
			if len(rep.Items) == limit {
				rep.More = true
				break
			}
			kv := it.KeyValue()
			var e item
			e.Key, e.KeyB64 = encodeBytes(kv.Key)
			sv := ""
			if !rg.KeysOnly {
				sv, e.ValueB64 = encodeBytes(kv.Value)
				e.Value = &sv
			}
			if err := t.charge(e.Key, sv); err != nil {
				return txnResponse1{}, err
			}
			rep.Items = append(rep.Items, e)
		}
		if err := it.Err(); err != nil {
			return txnResponse1{}, err
		}
		return txnResponse1{Range: rep}, nil
	}
}

// txn serves POST /v1/txn.
func (s *Server) txn(w http.ResponseWriter, r *http.Request) {
	var req txnRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", "request body too large")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_json", err.Error())
		return
	}
	if _, err := dec.Token(); err != io.EOF {
		writeError(w, http.StatusBadRequest, "invalid_json", "extra data after the JSON object")
		return
	}
	if len(req.Compare) > MaxTxnOps || len(req.Success) > MaxTxnOps || len(req.Failure) > MaxTxnOps {
		writeError(w, http.StatusBadRequest, "too_many_operations", fmt.Sprintf("at most %d compares and %d operations per branch", MaxTxnOps, MaxTxnOps))
		return
	}
	for i := range req.Compare {
		if err := req.Compare[i].validate(); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_argument", fmt.Sprintf("compare %d: %v", i, err))
			return
		}
	}
	for name, ops := range map[string][]txnOp{"success": req.Success, "failure": req.Failure} {
		for i := range ops {
			if err := ops[i].validate(); err != nil {
				writeError(w, http.StatusBadRequest, "invalid_argument", fmt.Sprintf("%s %d: %v", name, i, err))
				return
			}
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), TxnTimeout)
	defer cancel()
	var resp txnResponse
	var run *caskade.Tx
	err := s.DB.Transact(ctx, func(tx *caskade.Tx) error {
		t := &txnRun{s: s, tx: tx}
		run = tx
		resp = txnResponse{Succeeded: true, Responses: []txnResponse1{}}
		for i := range req.Compare {
			ok, err := t.compare(&req.Compare[i])
			if err != nil {
				return err
			}
			if !ok {
				resp.Succeeded = false
				break
			}
		}
		ops := req.Success
		if !resp.Succeeded {
			ops = req.Failure
		}
		for i := range ops {
			r1, err := t.op(&ops[i])
			if err != nil {
				return err
			}
			resp.Responses = append(resp.Responses, r1)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil && r.Context().Err() == nil {
			writeError(w, http.StatusConflict, "conflict", "transaction kept conflicting with concurrent writes; try again")
			return
		}
		if errors.Is(err, errReplyTooLarge) {
			writeError(w, http.StatusBadRequest, "reply_too_large", fmt.Sprintf(
				"the keys and values read would take more than %d bytes in the reply; read less per transaction (limit, keys_only, fewer operations) or use GET /v1/kv", maxTxnReply))
			return
		}
		status, code := dbErrorStatus(err)
		if code == "precondition_failed" {
			status, code = http.StatusConflict, "conflict"
		}
		writeError(w, status, code, s.errMessage(code, err))
		return
	}
	resp.Version = run.CommittedVersion()
	if resp.Version == 0 {
		resp.Version = run.ReadVersion()
	}
	writeJSON(w, http.StatusOK, resp)
}
