package redis

// globMatch reports whether s matches the glob pattern p with the rules of
// Redis's stringmatchlen (KEYS, SCAN MATCH, CONFIG GET):
//
//   - any sequence of bytes, ? any one byte
//     [abc]  one of the bytes, [^abc] none of them, [a-z] a range (ends in
//     either order), \x inside brackets a literal x
//     \x     a literal x
//
// An unterminated [ matches as if closed at the end of the pattern. Range
// bounds compare as C chars (signed), as Redis's do.
func globMatch(p, s []byte, nocase bool) bool {
	skip := false
	return globMatchImpl(p, s, nocase, &skip, 0)
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func globMatchImpl(p, s []byte, nocase bool, skipLonger *bool, nesting int) bool {
	if nesting > 1000 {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if globMatchImpl(p[1:], s, nocase, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
				s = s[1:]
			}
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			p = p[1:]
			not := len(p) > 0 && p[0] == '^'
			if not {
				p = p[1:]
			}
			match := false
			for {
				if len(p) >= 2 && p[0] == '\\' {
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				} else if len(p) > 0 && p[0] == ']' {
					break
				} else if len(p) == 0 {
					// Unterminated: step back so that the common advance
					// below leaves the pattern empty.
					p = nil
					goto closed
				} else if len(p) >= 3 && p[1] == '-' {
					start, end, c := int(int8(p[0])), int(int8(p[2])), int(int8(s[0]))
					if start > end {
						start, end = end, start
					}
					if nocase {
						start, end, c = int(int8(lowerByte(byte(start)))), int(int8(lowerByte(byte(end)))), int(int8(lowerByte(byte(c))))
					}
					p = p[2:]
					if c >= start && c <= end {
						match = true
					}
				} else {
					if !nocase {
						if p[0] == s[0] {
							match = true
						}
					} else if lowerByte(p[0]) == lowerByte(s[0]) {
						match = true
					}
				}
				p = p[1:]
			}
		closed:
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
			if p == nil {
				// The pattern ended inside the brackets.
				if len(s) == 0 {
					return true
				}
				return false
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if !nocase {
				if p[0] != s[0] {
					return false
				}
			} else if lowerByte(p[0]) != lowerByte(s[0]) {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

// globPrefix returns the literal prefix of a glob pattern: every key the
// pattern matches starts with it (case-sensitive patterns only).
func globPrefix(p []byte) []byte {
	for i, c := range p {
		switch c {
		case '*', '?', '[', '\\':
			return p[:i]
		}
	}
	return p
}
