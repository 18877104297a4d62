package resp

import "bytes"

// ReadCommand reads the next command and returns its arguments appended to
// args[:0] (pass the previous result to reuse it). The argument slices
// point into the Reader's buffer and are valid only until the next call
// of a Read, Peek, Skip or Reset method; each has its capacity capped at
// its length, so appending to one cannot overwrite another.
//
// Both request forms are accepted, chosen by the first byte as Redis does:
// '*' starts a multibulk request (*N\r\n$len\r\narg\r\n...); anything else
// starts an inline command, a line ended by \n (an \r before it is
// dropped) split like Redis's sdssplitargs: arguments are separated by
// blanks; within double quotes \n \r \t \b \a \xHH and \<any> are escapes,
// within single quotes \' is; a closing quote must be followed by a blank
// or the end of the line.
//
// As in Redis, empty inline lines and multibulk counts of zero or less
// (*0, *-1) are skipped, and the byte after a header line's \r and the
// two bytes after a bulk string are not checked. Redis finds line ends
// with strchr, so a NUL byte before the end of an inline line or header
// line hides the end: Redis then waits until 64 KiB are pending and
// replies "too big inline request" (or "too big mbulk count string", "too
// big bulk count string"); ReadCommand returns that error at once. The
// limits in force are those of the last SetLimits (see Limits).
//
// ReadCommand returns io.EOF only at a command boundary, and
// io.ErrUnexpectedEOF if the stream ends inside a command. A
// *ProtocolError carries the exact Redis error text to send back before
// closing the connection; ErrQueryTooBig means close without replying.
// Errors returned before any byte of a command was consumed (such as a
// read timeout while idle) leave the Reader usable; any other error is
// returned again by every later read until Reset.
//
// In the steady state, reading commands whose arguments fit the buffers
// already grown allocates nothing.
func (r *Reader) ReadCommand(args [][]byte) ([][]byte, error) {
	args = args[:0]
	if r.err != nil {
		return args, r.err
	}
	if err := r.finishBlob(); err != nil {
		return args, r.fail(err)
	}
	r.resetArena()
	for {
		p, err := r.br.Peek(1)
		if err != nil {
			return args, err
		}
		if p[0] == '*' {
			args, err = r.readMultibulk(args)
		} else {
			args, err = r.readInline(args)
		}
		if err != nil {
			return args[:0], r.fail(err)
		}
		if len(args) > 0 {
			return args, nil
		}
		r.resetArena()
	}
}

// queryLimit returns the query size limit in force.
func (r *Reader) queryLimit() int64 {
	if r.lim.AuthRequired {
		return min(r.lim.MaxQueryLen, UnauthMaxQueryLen)
	}
	return r.lim.MaxQueryLen
}

// readHeaderLine reads a multibulk or bulk header line as Redis does: up
// to the first \r, then one more byte whatever it is. It returns the
// line's first byte ('\r' for an empty line), its parsed number and
// whether that parsed, and the line's size including the terminator.
func (r *Reader) readHeaderLine(tooBig error) (first byte, n int64, ok bool, size int64, err error) {
	line, adv, err := r.peekUntil('\r', r.lim.MaxInlineLen, true)
	if err == errLineTooLong {
		return 0, 0, false, 0, tooBig
	}
	if err != nil {
		return 0, 0, false, 0, err
	}
	first = '\r'
	if len(line) > 0 {
		first = line[0]
		n, ok = ParseInt(line[1:])
	}
	size = int64(len(line)) + 2
	// Redis waits for one more byte after the \r and does not check it.
	if adv > 0 && r.br.Buffered() > adv {
		return first, n, ok, size, r.discard(adv + 1)
	}
	if err := r.discard(adv); err != nil {
		return 0, 0, false, 0, err
	}
	if _, err := r.br.ReadByte(); err != nil {
		return 0, 0, false, 0, err
	}
	return first, n, ok, size, nil
}

// readMultibulk reads a request that starts with '*'.
func (r *Reader) readMultibulk(args [][]byte) ([][]byte, error) {
	if a, ok := r.bufferedMultibulk(args); ok {
		return a, nil
	}
	_, count, ok, query, err := r.readHeaderLine(errTooBigMbulkCount)
	if err != nil {
		return args, err
	}
	if !ok || count > int64(r.lim.MaxArgs) {
		return args, errInvalidMultibulkLen
	}
	if r.lim.AuthRequired && count > UnauthMaxArgs {
		return args, errUnauthMultibulkLen
	}
	maxQuery := r.queryLimit()
	if query > maxQuery {
		return args, ErrQueryTooBig
	}
	for i := int64(0); i < count; i++ {
		first, n, ok, size, err := r.readHeaderLine(errTooBigBulkCount)
		if err != nil {
			return args, err
		}
		if first != '$' {
			return args, expectedDollar(first)
		}
		if !ok || n < 0 || n > r.lim.MaxBulkLen {
			return args, errInvalidBulkLen
		}
		if r.lim.AuthRequired && n > UnauthMaxBulkLen {
			return args, errUnauthBulkLen
		}
		query += size + n + 2
		if query > maxQuery {
			return args, ErrQueryTooBig
		}
		// Redis skips the two bytes after the bulk data unchecked.
		var arg []byte
		skip := 2
		if int64(r.br.Buffered()) >= n+2 {
			// Fast path: the argument is buffered.
			p, _ := r.br.Peek(int(n))
			arg = r.arenaBytes(int(n))
			copy(arg, p)
			skip += int(n)
		} else if arg, err = r.readInto(len(r.data), int(n)); err != nil {
			return args, err
		}
		if err := r.discard(skip); err != nil {
			return args, err
		}
		args = append(args, arg)
	}
	return args, nil
}

// readInline reads an inline command line; it returns no arguments for
// a blank line.
func (r *Reader) readInline(args [][]byte) ([][]byte, error) {
	line, adv, err := r.peekUntil('\n', r.lim.MaxInlineLen, true)
	if err == errLineTooLong {
		return args, errTooBigInline
	}
	if err != nil {
		return args, err
	}
	if int64(len(line))+1 > r.queryLimit() {
		return args, ErrQueryTooBig
	}
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := r.splitArgs(line, args)
	if err := r.discard(adv); err != nil {
		return args, err
	}
	if !ok {
		return args, errUnbalancedQuotes
	}
	if len(args) > r.lim.MaxArgs {
		return args, errTooBigInline
	}
	return args, nil
}

// isSpace reports whether c is a space in the C locale (isspace).
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexValue(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// SplitArgs splits line into arguments as Redis's sdssplitargs does for
// inline commands and redis.conf lines: blanks separate arguments; in
// double quotes \n, \r, \t, \b, \a and \xHH are escapes and a backslash
// before any other byte stands for that byte; single quotes are literal
// but for \'. ok is false for unbalanced quotes, a closing quote not
// followed by a blank, or a NUL byte.
func SplitArgs(line []byte) (args [][]byte, ok bool) {
	if bytes.IndexByte(line, 0) >= 0 {
		return nil, false
	}
	var r Reader
	return r.splitArgs(line, nil)
}

// splitArgs splits an inline command line exactly as Redis's sdssplitargs
// does, appending the arguments (copied into the arena) to args. It
// returns false for unbalanced quotes, or for a closing quote not followed
// by a blank.
func (r *Reader) splitArgs(line []byte, args [][]byte) ([][]byte, bool) {
	// The line holds no NUL (peekUntil rejects one), so the C string
	// sdssplitargs sees is the whole line.
	n := len(line)
	at := func(i int) byte {
		if i < n {
			return line[i]
		}
		return 0
	}
	out := r.arenaBytes(n)[:0]
	p := 0
	for {
		for p < n && isSpace(line[p]) {
			p++
		}
		if p >= n {
			return args, true
		}
		start := len(out)
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHexDigit(at(p+2)) && isHexDigit(at(p+3)):
					out = append(out, hexValue(at(p+2))*16+hexValue(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					switch c = at(p); c {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					}
					out = append(out, c)
				case c == '"':
					if next := at(p + 1); next != 0 && !isSpace(next) {
						return args, false
					}
					done = true
				case c == 0:
					return args, false
				default:
					out = append(out, c)
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					out = append(out, '\'')
				case c == '\'':
					if next := at(p + 1); next != 0 && !isSpace(next) {
						return args, false
					}
					done = true
				case c == 0:
					return args, false
				default:
					out = append(out, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					out = append(out, c)
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		if start == len(out) {
			args = append(args, emptyBytes)
		} else {
			args = append(args, out[start:len(out):len(out)])
		}
	}
}

// bufferedMultibulk reads a well-formed multibulk request that is wholly
// in the buffer, as clients send nearly every command, in one pass over
// the buffered bytes. It consumes nothing and reports false for anything
// else (a partial request, a malformed or unusual one, a limit reached),
// which readMultibulk then reads, and fails, exactly as Redis would.
func (r *Reader) bufferedMultibulk(args [][]byte) ([][]byte, bool) {
	buf, _ := r.br.Peek(r.br.Buffered())
	count, i, ok := bufferedHeader(buf, 0, '*', r.lim.MaxInlineLen)
	if !ok || count == 0 || count > int64(r.lim.MaxArgs) || (r.lim.AuthRequired && count > UnauthMaxArgs) {
		return args, false
	}
	maxQuery := r.queryLimit()
	query := int64(i)
	start, data := len(args), r.data
	for range count {
		n, j, ok := bufferedHeader(buf, i, '$', r.lim.MaxInlineLen)
		if !ok || n > r.lim.MaxBulkLen || (r.lim.AuthRequired && n > UnauthMaxBulkLen) {
			break
		}
		end := int64(j) + n + 2 // Redis skips the two bytes after the data unchecked
		query += end - int64(i)
		if query > maxQuery || end > int64(len(buf)) {
			break
		}
		arg := r.arenaBytes(int(n))
		copy(arg, buf[j:])
		args = append(args, arg)
		i = int(end)
	}
	if len(args)-start != int(count) {
		r.data = data // nothing returned uses the bytes taken since
		return args[:start], false
	}
	r.br.Discard(i)
	return args, true
}

// bufferedHeader parses the header line at buf[i:]: the kind byte, a
// decimal number without sign or leading zero, and CRLF, within the limit
// of a header line. It returns the number and the index after the line.
func bufferedHeader(buf []byte, i int, kind byte, limit int) (n int64, next int, ok bool) {
	if i >= len(buf) || buf[i] != kind {
		return 0, 0, false
	}
	j := i + 1
	for ; j < len(buf) && j-i <= 11; j++ {
		c := buf[j]
		if c < '0' || c > '9' {
			break
		}
		if c == '0' && j == i+1 && j+1 < len(buf) && buf[j+1] != '\r' {
			return 0, 0, false // a leading zero: leave it to ParseInt
		}
		n = n*10 + int64(c-'0')
	}
	if j == i+1 || j-i > 11 || j+1 >= len(buf) || buf[j] != '\r' || buf[j+1] != '\n' || j-i > limit {
		return 0, 0, false
	}
	return n, j + 2, true
}

// CommandBuffered reports whether ReadCommand can return without reading
// more input: a whole command is buffered, or enough of one to tell that
// it is malformed or over a limit (ReadCommand then fails at once). Empty
// commands before it (blank inline lines, *0 and *-1), which ReadCommand
// skips, do not count. A server uses it to write replies before waiting,
// and an event loop to read only what has arrived.
func (r *Reader) CommandBuffered() bool {
	if r.err != nil {
		return true
	}
	if r.blob != noBlob {
		return false // the rest of a streamed blob comes first
	}
	n := r.br.Buffered()
	if n == 0 {
		return false
	}
	b, _ := r.br.Peek(n)
	for len(b) > 0 {
		k, ok := r.firstCommand(b)
		if k == 0 {
			return ok
		}
		b = b[k:] // an empty command
	}
	return false
}

// firstCommand examines the command at the start of b as ReadCommand
// would read it: k > 0 is the size of an empty command, which it skips;
// otherwise ok tells whether the command is complete (or fails at once).
func (r *Reader) firstCommand(b []byte) (k int, ok bool) {
	lim := r.lim
	if b[0] != '*' {
		i := bytes.IndexByte(b, '\n')
		end := i
		if i < 0 {
			end = len(b)
		}
		if end > lim.MaxInlineLen || bytes.IndexByte(b[:end], 0) >= 0 {
			return 0, true // too long, or a NUL that hides the line end
		}
		if i < 0 {
			return 0, false
		}
		for _, c := range b[:i] {
			if !isSpace(c) {
				return 0, true
			}
		}
		return i + 1, false // a blank line
	}
	// header examines the header line at p (up to \r, then one more byte,
	// whatever it is): its number and whether that parsed, and where the
	// next line starts; state is 0 if it is all there, 1 if not yet, 2 if
	// it fails at once.
	header := func(p int) (n int64, valid bool, next int, state int) {
		i := bytes.IndexByte(b[p:], '\r')
		end := i
		if i < 0 {
			end = len(b) - p
		}
		if end > lim.MaxInlineLen || bytes.IndexByte(b[p:p+end], 0) >= 0 {
			return 0, false, 0, 2
		}
		if i < 0 || p+i+1 >= len(b) {
			return 0, false, 0, 1
		}
		if i > 0 {
			n, valid = ParseInt(b[p+1 : p+i])
		}
		return n, valid, p + i + 2, 0
	}
	maxQuery := r.queryLimit()
	count, valid, p, state := header(0)
	switch {
	case state != 0:
		return 0, state == 2
	case !valid || count > int64(lim.MaxArgs) || (lim.AuthRequired && count > UnauthMaxArgs):
		return 0, true
	case int64(p) > maxQuery:
		return 0, true
	case count <= 0:
		return p, false // an empty command
	}
	query := int64(p)
	for range count {
		if p >= len(b) {
			return 0, false
		}
		n, valid, q, state := header(p)
		if state != 0 {
			return 0, state == 2
		}
		if b[p] != '$' {
			return 0, true
		}
		if !valid || n < 0 || n > lim.MaxBulkLen || (lim.AuthRequired && n > UnauthMaxBulkLen) {
			return 0, true
		}
		query += int64(q-p) + n + 2
		if query > maxQuery {
			return 0, true
		}
		if n > int64(len(b)) {
			return 0, false
		}
		p = q + int(n) + 2
		if p > len(b) {
			return 0, false
		}
	}
	return 0, true
}
