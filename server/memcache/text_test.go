package memcache

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caskade/caskade"
	"github.com/caskade/caskade/server/metrics"
	"github.com/caskade/caskade/vfs"
	"github.com/caskade/caskade/vfs/errorfs"
)

// step is one request and the exact reply it must get.
type step struct{ req, want string }

// textCases are raw text-protocol exchanges, each run on a fresh server.
var textCases = []struct {
	name  string
	steps []step
}{
	{"set get", []step{
		{"set a 5 0 3\r\nabc\r\n", "STORED\r\n"},
		{"get a\r\n", "VALUE a 5 3\r\nabc\r\nEND\r\n"},
	}},
	{"get miss", []step{{"get nope\r\n", "END\r\n"}}},
	{"multi get keeps order and skips misses", []step{
		{"set a 1 0 1\r\nA\r\nset b 2 0 2\r\nBB\r\n", "STORED\r\nSTORED\r\n"},
		{"get b nope a\r\n", "VALUE b 2 2\r\nBB\r\nVALUE a 1 1\r\nA\r\nEND\r\n"},
		{"get  a   b  \r\n", "VALUE a 1 1\r\nA\r\nVALUE b 2 2\r\nBB\r\nEND\r\n"},
	}},
	{"bare newline terminators", []step{
		{"set a 0 0 1\nx\r\nget a\n", "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n"},
	}},
	{"empty value", []step{
		{"set e 7 0 0\r\n\r\n", "STORED\r\n"},
		{"get e\r\n", "VALUE e 7 0\r\n\r\nEND\r\n"},
	}},
	{"binary-safe value", []step{
		{"set b 0 0 6\r\na\r\nb\x00c\r\n", "STORED\r\n"},
		{"get b\r\n", "VALUE b 0 6\r\na\r\nb\x00c\r\nEND\r\n"},
	}},
	{"flags are 32 bits", []step{
		{"set f 4294967295 0 1\r\nx\r\n", "STORED\r\n"},
		{"get f\r\n", "VALUE f 4294967295 1\r\nx\r\nEND\r\n"},
		{"set f 4294967296 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set f -1 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n"},
	}},
	{"add", []step{
		{"add a 0 0 1\r\n1\r\n", "STORED\r\n"},
		{"add a 0 0 1\r\n2\r\n", "NOT_STORED\r\n"},
		{"get a\r\n", "VALUE a 0 1\r\n1\r\nEND\r\n"},
	}},
	{"replace", []step{
		{"replace a 0 0 1\r\n1\r\n", "NOT_STORED\r\n"},
		{"set a 0 0 1\r\n1\r\nreplace a 3 0 1\r\n2\r\n", "STORED\r\nSTORED\r\n"},
		{"get a\r\n", "VALUE a 3 1\r\n2\r\nEND\r\n"},
	}},
	{"append and prepend keep flags", []step{
		{"append a 0 0 1\r\n1\r\nprepend a 0 0 1\r\n1\r\n", "NOT_STORED\r\nNOT_STORED\r\n"},
		{"set a 9 0 2\r\nmm\r\nappend a 1 0 2\r\nzz\r\nprepend a 2 0 2\r\naa\r\n", "STORED\r\nSTORED\r\nSTORED\r\n"},
		{"get a\r\n", "VALUE a 9 6\r\naammzz\r\nEND\r\n"},
	}},
	{"cas on missing key", []step{{"cas a 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n"}}},
	{"cas without unique", []step{{"cas a 0 0 1\r\nx\r\nget a\r\n", "CLIENT_ERROR bad command line format\r\nEND\r\n"}}},
	{"negative exptime expires at once", []step{
		{"set x 0 -1 1\r\nx\r\n", "STORED\r\n"},
		{"get x\r\n", "END\r\n"},
	}},
	{"past unix exptime expires at once", []step{
		{"set x 0 2592001 1\r\nx\r\n", "STORED\r\n"},
		{"get x\r\n", "END\r\n"},
	}},
	{"incr decr", []step{
		{"set n 0 0 19\r\n9223372036854775807\r\n", "STORED\r\n"},
		{"incr n 1\r\n", "9223372036854775808\r\n"},
		{"decr n 1\r\n", "9223372036854775807\r\n"},
		{"set n 0 0 1\r\n1\r\nincr n 8\r\n", "STORED\r\n9\r\n"},
		{"decr n 9\r\ndecr n 5\r\n", "0\r\n0\r\n"},
		{"set n 0 0 20\r\n18446744073709551615\r\nincr n 1\r\n", "STORED\r\n0\r\n"},
		{"incr n 18446744073709551615\r\n", "18446744073709551615\r\n"},
		{"get n\r\n", "VALUE n 0 20\r\n18446744073709551615\r\nEND\r\n"},
		{"decr bogus 5\r\nincr bogus 5\r\n", "NOT_FOUND\r\nNOT_FOUND\r\n"},
		{"set t 0 0 2\r\nhi\r\nincr t 1\r\n", "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		{"set t 0 0 0\r\n\r\nincr t 1\r\n", "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		{"set t 0 0 2\r\n-1\r\nincr t 1\r\n", "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		// As memcached reads a number (strtoull, on a C string): a minus
		// sign is refused only where the negated number is 2^63 or more,
		// and a NUL byte ends the number.
		{"set t 0 0 2\r\n-0\r\nincr t 1\r\n", "STORED\r\n1\r\n"},
		{"set t 0 0 3\r\n -0\r\nincr t 1\r\n", "STORED\r\n1\r\n"},
		{"set t 0 0 21\r\n-18446744073709551615\r\nincr t 1\r\n", "STORED\r\n2\r\n"},
		{"set t 0 0 20\r\n-9223372036854775809\r\nincr t 1\r\n", "STORED\r\n9223372036854775808\r\n"},
		{"set t 0 0 20\r\n-9223372036854775808\r\nincr t 1\r\n", "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		{"set t 0 0 21\r\n-18446744073709551616\r\nincr t 1\r\n", "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		{"set t 0 0 5\r\n12\x00ab\r\nincr t 1\r\n", "STORED\r\n13\r\n"},
		{"set t 0 0 3\r\n\x0012\r\nincr t 1\r\n", "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		{"set t 0 0 20\r\n18446744073709551616\r\nincr t 1\r\n", "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		{"incr n x\r\nincr n -1\r\nincr n\r\n", "CLIENT_ERROR invalid numeric delta argument\r\nCLIENT_ERROR invalid numeric delta argument\r\nCLIENT_ERROR bad command line format\r\n"},
	}},
	{"incr keeps flags and expiry", []step{
		{"set n 42 1000 1\r\n5\r\nincr n 10\r\n", "STORED\r\n15\r\n"},
		{"get n\r\n", "VALUE n 42 2\r\n15\r\nEND\r\n"},
		{"mg n t\r\n", "HD t1000\r\n"},
	}},
	{"touch", []step{
		{"touch a 10\r\n", "NOT_FOUND\r\n"},
		{"set a 0 0 1\r\nx\r\ntouch a 100\r\n", "STORED\r\nTOUCHED\r\n"},
		{"mg a t\r\n", "HD t100\r\n"},
		{"touch a 0\r\nmg a t\r\n", "TOUCHED\r\nHD t-1\r\n"},
		{"touch a x\r\n", "CLIENT_ERROR invalid exptime argument\r\n"},
		{"touch a\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"touch a -1\r\nget a\r\n", "TOUCHED\r\nEND\r\n"},
	}},
	{"gat gats", []step{
		{"set a 3 0 1\r\nx\r\n", "STORED\r\n"},
		{"gat 100 a nope\r\n", "VALUE a 3 1\r\nx\r\nEND\r\n"},
		{"mg a t\r\n", "HD t100\r\n"},
		{"gat x a\r\n", "CLIENT_ERROR invalid exptime argument\r\n"},
		{"gat 10\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"gat -1 a\r\n", "VALUE a 3 1\r\nx\r\nEND\r\n"},
		{"get a\r\n", "END\r\n"},
	}},
	{"delete", []step{
		{"delete a\r\n", "NOT_FOUND\r\n"},
		{"set a 0 0 1\r\nx\r\ndelete a\r\nget a\r\n", "STORED\r\nDELETED\r\nEND\r\n"},
		{"delete\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set a 0 0 1\r\nx\r\ndelete a 0\r\n", "STORED\r\nDELETED\r\n"},
		{"set a 0 0 1\r\nx\r\ndelete a 0 noreply\r\nget a\r\n", "STORED\r\nEND\r\n"},
		{"set a 0 0 1\r\nx\r\ndelete a 10\r\n", "STORED\r\nCLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"},
		{"delete a 10 noreply\r\nget a\r\n", "VALUE a 0 1\r\nx\r\nEND\r\n"},
	}},
	{"noreply", []step{
		{"set a 0 0 1 noreply\r\n1\r\nadd a 0 0 1 noreply\r\n2\r\nadd b 0 0 1 noreply\r\n2\r\n", ""},
		{"get a b\r\n", "VALUE a 0 1\r\n1\r\nVALUE b 0 1\r\n2\r\nEND\r\n"},
		{"replace a 0 0 1 noreply\r\n3\r\nappend a 0 0 1 noreply\r\n4\r\nprepend a 0 0 1 noreply\r\n5\r\n", ""},
		{"get a\r\n", "VALUE a 0 3\r\n534\r\nEND\r\n"},
		{"set n 0 0 1\r\n5\r\n", "STORED\r\n"},
		{"incr n 3 noreply\r\ndecr n 2 noreply\r\ntouch n 100 noreply\r\n", ""},
		{"get n\r\n", "VALUE n 0 1\r\n6\r\nEND\r\n"},
		{"delete n noreply\r\ndelete n noreply\r\nincr n 1 noreply\r\n", ""},
		{"get n\r\n", "END\r\n"},
		{"cas a 0 0 1 1 noreply\r\nx\r\n", ""},
		{"verbosity 1 noreply\r\nflush_all noreply\r\nflush_all 0 noreply\r\n", ""},
		{"get a\r\n", "END\r\n"},
		// As in memcached, noreply also silences errors of the command.
		{"set a x 0 1 noreply\r\n1\r\nincr a x noreply\r\nbogus noreply\r\n", ""},
		{"set a 0 0 1 noreply\r\nxyz\r\n", "CLIENT_ERROR bad command line format\r\n"},
	}},
	{"unknown commands", []step{
		{"bogus\r\n", "ERROR\r\n"},
		{"GET a\r\n", "ERROR\r\n"},
		{" get a\r\n", "ERROR\r\n"},
		{"slabs reassign 1 2\r\n", "ERROR\r\n"},
		{"shutdown\r\n", "SERVER_ERROR: shutdown not enabled\r\n"},
	}},
	{"short lines", []step{
		{"\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"\n", "CLIENT_ERROR bad command line format\r\n"},
		{" \n", "CLIENT_ERROR bad command line format\r\n"},
		{"xx\r\n", "ERROR\r\n"},
	}},
	{"bad keys", []step{
		{"get\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"get " + strings.Repeat("k", 251) + "\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"get " + strings.Repeat("k", 250) + "\r\n", "END\r\n"},
		{"get a\x01b\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"get a\tb\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"get \xffdb1key\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"get ok \xffdb1key\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set \xffk 0 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"delete \x7f\r\nincr \xffa 1\r\ntouch \xffa 1\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"set " + strings.Repeat("k", 251) + " 0 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"get \xc3\xa9t\xc3\xa9\r\n", "END\r\n"},
	}},
	{"bad storage lines swallow the data", []step{
		{"set a x 0 1\r\nz\r\nget a\r\n", "CLIENT_ERROR bad command line format\r\nEND\r\n"},
		{"set a 0 x 1\r\nz\r\nget a\r\n", "CLIENT_ERROR bad command line format\r\nEND\r\n"},
		{"cas a 0 0 1 x\r\nz\r\nget a\r\n", "CLIENT_ERROR bad command line format\r\nEND\r\n"},
		{"set a 0 0 3 \r\nabc\r\nget a\r\n", "STORED\r\nVALUE a 0 3\r\nabc\r\nEND\r\n"},
	}},
	{"unparseable length is not swallowed", []step{
		// memcached cannot know how much to skip: the data line is then
		// read as a command and answered.
		{"set a 0 0 x\r\nzzz\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n"},
		{"set a 0 0 -1\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set a 0 0\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set a 0 0 4294967296\r\n", "CLIENT_ERROR bad command line format\r\n"},
	}},
	{"a sign only where memcached takes one", []step{
		// memcached 1.6.4x reads a storage command's flags and exptime
		// with strtoul/strtol, which take a '+', and every other number
		// with a parser of digits only (and '-' where it is signed).
		{"set a +5 +100 1\r\nx\r\n", "STORED\r\n"},
		{"mg a f v\r\n", "VA 1 f5\r\nx\r\n"},
		{"set a 0 0 +1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"cas a 0 0 1 +1\r\ny\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"prepend a 0 0 +1\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set n 0 0 1\r\n5\r\nincr n +1\r\ndecr n +1\r\n",
			"STORED\r\nCLIENT_ERROR invalid numeric delta argument\r\nCLIENT_ERROR invalid numeric delta argument\r\n"},
		{"touch a +10\r\ngat +10 a\r\ngats +0 a\r\n", "CLIENT_ERROR invalid exptime argument\r\nCLIENT_ERROR invalid exptime argument\r\nCLIENT_ERROR invalid exptime argument\r\n"},
		{"verbosity +1\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"flush_all +0\r\n", "CLIENT_ERROR invalid exptime argument\r\n"},
		{"ms a +1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"ms a 1 T+10\r\nx\r\n", "CLIENT_ERROR bad token in command line format\r\n"},
		{"ms a 1 F+1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"ms a 1 E+5\r\nx\r\n", "CLIENT_ERROR bad token in command line format\r\n"},
		{"ms a 1 C+1\r\nx\r\n", "CLIENT_ERROR bad token in command line format\r\n"},
		{"mg a N+10 v\r\nmg a R+10 v\r\nmg a T+10 v\r\n", "CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad token in command line format\r\n"},
		{"md a C+1\r\nmd a I T+30\r\n", "CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad token in command line format\r\n"},
		{"ma n J+5 N0\r\nma n D+1\r\nma n T+10\r\n", "CLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\n"},
		{"mg a f v\r\nmg n v\r\n", "VA 1 f5\r\nx\r\nVA 1\r\n5\r\n"},
	}},
	{"a '-' alone is 0 where memcached reads a signed number", []step{
		// As memcached 1.6.45 answers each; an unsigned number (flags,
		// delta, cas unique, E, C, F, J, D) refuses it, and so do
		// strtoul and strtol (a storage command's flags and exptime).
		{"set a 0 0 -\r\n\r\nget a\r\n", "STORED\r\nVALUE a 0 0\r\n\r\nEND\r\n"},
		{"ms b -\r\n\r\nmg b v\r\n", "HD\r\nVA 0\r\n\r\n"},
		{"set c 0 0 1\r\nx\r\ntouch c -\r\ngat - c\r\n", "STORED\r\nTOUCHED\r\nVALUE c 0 1\r\nx\r\nEND\r\n"},
		{"mg c T- t v\r\nmg d N- t v\r\nmg c R- v\r\n", "VA 1 t-1\r\nx\r\nVA 0 t-1 W\r\n\r\nVA 1\r\nx\r\n"},
		{"ma e N- v t\r\n", "VA 1 t-1\r\n0\r\n"},
		{"md c I T-\r\nmg c v t\r\n", "HD\r\nVA 1 t-1 X W\r\nx\r\n"},
		{"incr e -\r\nverbosity -\r\n", "CLIENT_ERROR invalid numeric delta argument\r\nCLIENT_ERROR bad command line format\r\n"},
		{"ms c 1 F-\r\nx\r\nms c 1 E-\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad token in command line format\r\n"},
		{"mg c C- v\r\nmd c C-\r\nma e J- N0\r\nma e D-\r\n", "CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad token in command line format\r\n" +
			"CLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\n"},
		{"set a - 0 1\r\nx\r\nset a 0 - 1\r\nx\r\ncas a 0 0 1 -\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n" +
			"CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"mg c T-- v\r\nmg c N-x v\r\n", "CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad token in command line format\r\n"},
		{"flush_all -\r\nget a b c d e\r\n", "OK\r\nEND\r\n"},
	}},
	{"a data length memcached cannot add 2 to", []step{
		// memcached adds the CRLF to a 32-bit signed length: past
		// 2^31-3 the line is bad and nothing is skipped.
		{"set a 0 0 2147483646\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"ms a 2147483647\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"get a\r\n", "END\r\n"},
	}},
	{"number tokens too long for memcached's parser", []step{
		// 11 bytes at most for 32 bits, 22 for 64, leading zeros included;
		// a storage command's flags and exptime (strtoul, strtol) take any.
		{"set z 0 0 1\r\n5\r\n", "STORED\r\n"},
		{"touch z 00000000001\r\ntouch z 000000000001\r\n", "TOUCHED\r\nCLIENT_ERROR invalid exptime argument\r\n"},
		{"gat 000000000001 z\r\nflush_all 000000000001\r\nverbosity 000000000001\r\n", "CLIENT_ERROR invalid exptime argument\r\nCLIENT_ERROR invalid exptime argument\r\nCLIENT_ERROR bad command line format\r\n"},
		{"incr z 0000000000000000000001\r\nincr z 00000000000000000000001\r\n", "6\r\nCLIENT_ERROR invalid numeric delta argument\r\n"},
		{"cas z 0 0 1 00000000000000000000001\r\nx\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"set z 0 0 000000000001\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"ms z 000000000001\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"set z 00000000000000000000001 +0000000000000000000000 1\r\n6\r\nget z\r\n", "STORED\r\nVALUE z 1 1\r\n6\r\nEND\r\n"},
		{"mg z T000000000001\r\nmg z C00000000000000000000001 v\r\n", "CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad token in command line format\r\n"},
		{"ms z 1 F000000000001\r\nx\r\nma z D00000000000000000000001\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR invalid or duplicate flag\r\n"},
		{"ms z 1 T-0000000001\r\nx\r\nms z 1 T-00000000001\r\nx\r\n", "HD\r\nCLIENT_ERROR bad token in command line format\r\n"},
	}},
	{"meta flags the tokenizer refuses", []step{
		// A flag token starting with neither a letter nor a digit makes
		// the whole line bad; a letter the command does not know is an
		// invalid flag.
		{"mg a !\r\nmg a v ~\r\nmg a v \x80\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"md a {\r\nma a !\r\nme a !\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"ms a 1 ~\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"}, // x is a command
		{"mg a 9\r\nmg a Z\r\n", "CLIENT_ERROR invalid flag\r\nCLIENT_ERROR invalid flag\r\n"},
		{"get a\r\n", "END\r\n"},
	}},
	{"bad data chunk", []step{
		{"set a 0 0 3\r\nabcde\r\n", "CLIENT_ERROR bad data chunk\r\nCLIENT_ERROR bad command line format\r\n"},
		{"get a\r\n", "END\r\n"},
		{"set a 0 0 1\r\nab\r\nget a\r\n", "CLIENT_ERROR bad data chunk\r\nCLIENT_ERROR bad command line format\r\nEND\r\n"},
		{"set a 0 0 1\r\nx\r\n", "STORED\r\n"},
	}},
	{"item size limit", []step{
		{fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", DefaultMaxItemSize+1, strings.Repeat("z", DefaultMaxItemSize+1)),
			"SERVER_ERROR object too large for cache\r\n"},
		{"get big\r\n", "END\r\n"},
		{fmt.Sprintf("set big 0 0 %d\r\n%s\r\n", DefaultMaxItemSize, strings.Repeat("z", 10)+strings.Repeat("y", DefaultMaxItemSize-10)), "STORED\r\n"},
		{"append big 0 0 1\r\nx\r\n", "NOT_STORED\r\n"},
		{"ms big 2 MA\r\nxx\r\n", "NS\r\n"},
	}},
	{"flush_all", []step{
		{"set a 0 0 1\r\nx\r\nset b 0 0 1\r\ny\r\nflush_all\r\n", "STORED\r\nSTORED\r\nOK\r\n"},
		{"get a b\r\n", "END\r\n"},
		{"flush_all x\r\n", "CLIENT_ERROR invalid exptime argument\r\n"},
		{"flush_all 0\r\n", "OK\r\n"},
	}},
	{"misc", []step{
		{"version\r\n", "VERSION " + MemcachedVersion + "\r\n"},
		{"verbosity 1\r\n", "OK\r\n"},
		{"verbosity\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"verbosity x\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"stats reset\r\n", "RESET\r\n"},
		{"stats items\r\n", "END\r\n"},
		{"stats nonsense\r\n", "ERROR\r\n"},
	}},
	{"meta basics", []step{
		{"me none\r\n", "EN\r\n"},
		{"md deltest\r\n", "NF\r\n"},
		{"ms foo 2\r\nhi\r\n", "HD\r\n"},
		{"md foo\r\nmg foo v\r\n", "HD\r\nEN\r\n"},
		{"ms a 1\r\n1\r\n", "HD\r\n"},
		{"ms a 1 Otest\r\n1\r\n", "HD Otest\r\n"},
		{"ms a 1 s\r\n1\r\n", "HD s1\r\n"},
		{"ms a 1 k\r\n1\r\n", "HD ka\r\n"},
		{"ms a 2 s k O123 T0\r\n12\r\n", "HD s2 ka O123\r\n"},
		{"ms a 1 F123\r\n1\r\nmg a f\r\n", "HD\r\nHD f123\r\n"},
		{"ms a 1 F4294967295\r\n1\r\nmg a f v\r\n", "HD\r\nVA 1 f4294967295\r\n1\r\n"},
		{"mg a\r\n", "HD\r\n"},
		{"mg a s v t O9 k q\r\n", "VA 1 s1 t-1 O9 ka\r\n1\r\n"},
		{"mg missing s v O9 k\r\n", "EN O9 kmissing\r\n"},
		{"mn\r\n", "MN\r\n"},
	}},
	{"meta quiet mode", []step{
		{"mg nope v q\r\nmg nope2 v q k\r\n", ""},
		{"ms q1 1 q\r\nx\r\nms q2 1 q ME\r\ny\r\n", ""},
		{"ms q1 1 q ME\r\nz\r\n", "NS\r\n"},
		{"mg q1 v q\r\n", "VA 1\r\nx\r\n"},
		{"md q1 q\r\nmd q1 q\r\n", "NF\r\n"},
		{"ma cnt q N0 J5\r\nma cnt q\r\nma nocnt q\r\n", "NF\r\n"},
		{"mg cnt v\r\n", "VA 1\r\n6\r\n"},
		{"ms q3 2 q\r\nabc\r\n", "CLIENT_ERROR bad data chunk\r\nCLIENT_ERROR bad command line format\r\n"},
	}},
	{"meta set modes", []step{
		{"ms md 2 T120\r\naa\r\n", "HD\r\n"},
		{"ms md 2 T120 ME\r\naa\r\n", "NS\r\n"},
		{"ms mt 2 T120 ME\r\nbb\r\n", "HD\r\n"},
		{"ms mt 2 T120 MA\r\ncc\r\nmg mt s v\r\n", "HD\r\nVA 4 s4\r\nbbcc\r\n"},
		{"ms mt 2 T120 MP\r\naa\r\nmg mt s v\r\n", "HD\r\nVA 6 s6\r\naabbcc\r\n"},
		{"ms mr 2 T120 MR\r\nzz\r\n", "NS\r\n"},
		{"ms mt 2 T120 MR\r\nxx\r\nmg mt v\r\n", "HD\r\nVA 2\r\nxx\r\n"},
		{"ms mt 2 T120 MS\r\nyy\r\n", "HD\r\n"},
		{"ms mt 2 T120 MZ\r\ntt\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n"},
		// Modes are upper case only, and a bare M is no mode at all
		// (memcached 1.6.18 and 1.6.45 alike): "Me" must not add, nor
		// "Ma" append, nor "M" set; the data block is skipped.
		{"ms mt 2 Me\r\nee\r\nms mt 2 Ma\r\naa\r\nms mt 2 Mp\r\npp\r\nms mt 2 Mr\r\nrr\r\nms mt 2 Ms\r\nss\r\nms mt 2 M\r\nmm\r\nms mt 2 M q\r\nmm\r\n",
			strings.Repeat("CLIENT_ERROR invalid mode for ms M token\r\n", 7)},
		{"ms ml 2 Me\r\nee\r\nmg mt v\r\nmg ml v\r\n", "CLIENT_ERROR invalid mode for ms M token\r\nVA 2\r\nyy\r\nEN\r\n"},
		{"ms ac 2 MA C5000 T30\r\nhi\r\n", "NS\r\n"},
		{"ms ac 2 MA T30\r\nhi\r\n", "NS\r\n"},
		{"ms av 2 MA N30\r\nmo\r\nmg av v t\r\n", "HD\r\nVA 2 t30\r\nmo\r\n"},
		{"ms av 2 MA N30 s\r\nko\r\n", "HD s4\r\n"},
		{"ms mt 2 T120 ME C1\r\nqq\r\n", "NS\r\n"},
	}},
	{"meta arithmetic", []step{
		{"ma mo\r\nma mo D1\r\n", "NF\r\nNF\r\n"},
		{"set mo 0 0 1\r\n1\r\nma mo\r\n", "STORED\r\nHD\r\n"},
		{"set mo 0 0 1\r\nq\r\nma mo\r\n", "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		{"ma mu N90\r\nmg mu s t v Ofoo k\r\n", "HD\r\nVA 1 s1 t90 Ofoo kmu\r\n0\r\n"},
		{"ma mu T300 v t\r\n", "VA 1 t300\r\n1\r\n"},
		{"ma mi N0 J13 v t\r\n", "VA 2 t-1\r\n13\r\n"},
		{"ma mi N0 J13 v t\r\n", "VA 2 t-1\r\n14\r\n"},
		{"ma mi N0 J13 v t D30\r\n", "VA 2 t-1\r\n44\r\n"},
		{"ma mi N0 J13 v t MD D22\r\n", "VA 2 t-1\r\n22\r\n"},
		{"ma mi N0 J13 v t MD D9000\r\n", "VA 1 t-1\r\n0\r\n"},
		{"ma mi M- v\r\nma mi M+ v k Oxy\r\n", "VA 1\r\n0\r\nVA 1 kmi Oxy\r\n1\r\n"},
		{"ma mc N0 C99999 v\r\n", "VA 1\r\n0\r\n"}, // created on a miss, as memcached does
		{"ma mc N0 C99999 v\r\n", "EX\r\n"},
		{"ma mc C0 v\r\nma mc C0 MD q\r\nmg mc v\r\n", "VA 1\r\n1\r\nVA 1\r\n0\r\n"}, // C0 checks nothing
		// An empty value is not a number, even to a cas that does not
		// match; other values are checked for digits after the cas.
		{"mg me N0\r\nma me C1\r\nma me N0 C1 MD\r\n", "HD W\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"},
		{"set me 0 0 1\r\nq\r\nma me C1\r\n", "STORED\r\nEX\r\n"},
		{"ma mi MX\r\n", "CLIENT_ERROR invalid mode for ma M token\r\n"},
		{"ma mi Mi\r\nma mi Md\r\nma mi M\r\nma mi M v\r\n", strings.Repeat("CLIENT_ERROR invalid mode for ma M token\r\n", 4)},
		{"ma mi Dx\r\nma mi Y\r\nma mi v v\r\n", "CLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\n"},
		{"ma nf O1 k\r\n", "NF O1 knf\r\n"},
		// memcached words every error of its flag parser so for ma: a
		// key too long, too many tokens, a bad F. Its tokenizer's "bad
		// command line format" comes first.
		{"ma " + strings.Repeat("k", 251) + " v\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
		{"ma mi v s t c f k O1 h l q u P1 L1 E2 R3 T4 N5 x I\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
		{"ma mi Fx\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n"},
		{"ma " + strings.Repeat("k", 251) + " !\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"ma mi O1 O2 O3 O4 O5 O6 O7 O8 O9 O10 O11 O12 O13 O14 O15 O16 O17 O18 O19 !\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"mg mi v s t c f k O1 h l q u P1 L1 E2 R3 T4 N5 x I !\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"ma mi O" + strings.Repeat("o", 32) + "\r\n", "CLIENT_ERROR opaque token too long\r\n"},
	}},
	{"meta errors", []step{
		{"mg\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"mg a Y\r\n", "CLIENT_ERROR invalid flag\r\n"},
		{"mg a v v\r\n", "CLIENT_ERROR duplicate flag\r\n"},
		{"mg a T\r\n", "CLIENT_ERROR bad token in command line format\r\n"},
		{"mg a Tx\r\nmg a Cx\r\nmg a N\r\nmg a R--\r\n", strings.Repeat("CLIENT_ERROR bad token in command line format\r\n", 4)},
		{"mg a O" + strings.Repeat("o", 32) + "\r\n", "CLIENT_ERROR opaque token too long\r\n"},
		{"mg a O" + strings.Repeat("o", 31) + "\r\n", "EN O" + strings.Repeat("o", 31) + "\r\n"},
		{"mg a v s t c f k O1 h l q u P1 L1 E2 R3 T4 N5 x I\r\n", "CLIENT_ERROR options flags are too long\r\n"},
		{"mg " + strings.Repeat("k", 251) + " v\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"mg \xffk v\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"mg a\x01 v\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"mg !!! b v\r\n", "CLIENT_ERROR error decoding key\r\n"},
		{"mg /w== b v\r\n", "CLIENT_ERROR bad command line format\r\n"},
		{"ms\r\nms a\r\nms a x\r\nms a -1\r\n", strings.Repeat("CLIENT_ERROR bad command line format\r\n", 4)},
		{"ms a 1 Y\r\nx\r\nmg a\r\n", "CLIENT_ERROR invalid flag\r\nEN\r\n"},
		// A flag token memcached's tokenizer refuses makes the line bad
		// before it is an ms: the data that follows is read as commands.
		{"ms a 2 !\r\nget a\r\nms a 1 k \x80\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nEND\r\nCLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"ms a 1 Fx\r\nx\r\nmg a\r\n", "CLIENT_ERROR bad command line format\r\nEN\r\n"},
		{"ms a 1 q v v\r\nx\r\n", "CLIENT_ERROR duplicate flag\r\n"},
		{fmt.Sprintf("ms big %d q\r\n%s\r\n", DefaultMaxItemSize+1, strings.Repeat("z", DefaultMaxItemSize+1)), "SERVER_ERROR object too large for cache\r\n"},
		{"md a Y\r\nme\r\n", "CLIENT_ERROR invalid flag\r\nCLIENT_ERROR bad command line format\r\n"},
	}},
	{"meta binary keys", []step{
		{"ms 44OG44K544OI 2 b\r\npo\r\n", "HD\r\n"},
		{"mg 44OG44K544OI v\r\n", "EN\r\n"},
		{"mg 44OG44K544OI b v k\r\n", "VA 2 k44OG44K544OI b\r\npo\r\n"},
		{"get \xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88\r\n", "VALUE \xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88 0 2\r\npo\r\nEND\r\n"},
		{"ms AAEgCg== 1 b k\r\nx\r\n", "HD kAAEgCg== b\r\n"},
		{"mg AAEgCg== b k v\r\n", "VA 1 kAAEgCg== b\r\nx\r\n"},
		{"mg AAEgCg b k v\r\n", "CLIENT_ERROR error decoding key\r\n"},
		{"md AAEgCg== b k q\r\nmg AAEgCg== b k\r\n", "EN kAAEgCg== b\r\n"},
		{"me AAEgCg== b\r\nme AAEgCg\r\n", "EN\r\nEN\r\n"},
	}},
	{"meta win tokens", []step{
		{"mg needwin s v N30 t\r\n", "VA 0 s0 t30 W\r\n\r\n"},
		{"mg needwin s v N30\r\n", "VA 0 s0 Z\r\n\r\n"},
		{"ms needwin 2 T120\r\nmu\r\nmg needwin v N30\r\n", "HD\r\nVA 2\r\nmu\r\n"},
		{"mg needwin t R130\r\n", "HD t120 W\r\n"},
		{"mg needwin t R130\r\n", "HD t120 Z\r\n"},
		{"md needwin I T30\r\nmg needwin t v\r\n", "HD\r\nVA 2 t30 X W\r\nmu\r\n"},
		{"mg needwin\r\n", "HD Z X\r\n"},
		{"ms needwin 2\r\nnu\r\nmg needwin v\r\n", "HD\r\nVA 2\r\nnu\r\n"},
		// Made with a TTL in the past, the item is a hit that wins, once.
		{"mg nx N-1 v q\r\nmg nx N-1 s k O1\r\nmg nx v\r\n", "VA 0 W\r\n\r\nHD s0 knx O1 W\r\nEN\r\n"},
		// N and T set a new item's TTL where they come: the later wins.
		{"mg nt1 T-1 N1000 t\r\nmg nt1 t\r\n", "HD t1000 W\r\nHD t1000 Z\r\n"},
		{"mg nt2 N1000 T-1\r\nmg nt2 t\r\n", "HD W\r\nEN\r\n"},
		{"mg nt3 N-1 T100\r\nmg nt3 t\r\n", "HD W\r\nHD t100 Z\r\n"},
		{"mg nt4 T50 t N1000\r\nmg nt4 t\r\n", "HD t50 W\r\nHD t1000 Z\r\n"},
		{"mg nt5 t N50 T1000\r\nmg nt5 t\r\n", "HD t-1 W\r\nHD t1000 Z\r\n"},
		{"ma nt6 T-1 N1000 v\r\nmg nt6 t\r\n", "VA 1\r\n0\r\nHD t1000\r\n"},
		{"ma nt7 N1000 T-1 v\r\nmg nt7 t\r\n", "VA 1\r\n0\r\nEN\r\n"},
		{"ma nt8 N1000 t T50\r\nmg nt8 t\r\n", "HD t1000\r\nHD t50\r\n"},
	}},
	{"meta hit and last access", []step{
		{"ms hl 1\r\nx\r\nmg hl h l\r\n", "HD\r\nHD h0 l0\r\n"},
		{"mg hl h\r\nmg hl h u\r\n", "HD h1\r\nHD h1\r\n"},
		{"me hl\r\n", "ME hl exp=-1 la=0 cas=1 fetch=yes cls=1 size=3\r\n"},
		{"ms hl 1\r\ny\r\nmg hl h\r\n", "HD\r\nHD h0\r\n"},
	}},
	{"meta delete", []step{
		{"ms d 2 F5\r\nzz\r\nmd d x\r\nmg d v f\r\n", "HD\r\nHD\r\nVA 0 f0\r\n\r\n"},
		{"md d q\r\nmd d q O1 k\r\n", "NF O1 kd\r\n"},
	}},
	// Checked against memcached 1.6.18 by TestDifferentialAgainstMemcached
	// and against 1.6.45's source: flags answer in their order, so a t
	// before N or T shows the TTL from before.
	{"meta flags answer in order", []step{
		{"mg o1 t N30\r\n", "HD t-1 W\r\n"},
		{"mg o2 N30 t\r\n", "HD t30 W\r\n"},
		{"ms o3 1 T100\r\na\r\nmg o3 t T300\r\nmg o3 t\r\n", "HD\r\nHD t100\r\nHD t300\r\n"},
		{"ma o4 t N50\r\nma o5 N50 t\r\n", "HD t-1\r\nHD t50\r\n"},
	}},
	// memcached's base64 decoder skips bytes outside the alphabet; the
	// rest must be whole groups of four.
	{"meta base64 keys", []step{
		{"ms eCB5 1 b\r\nv\r\nmg eCB5! b v k\r\n", "HD\r\nVA 1 keCB5 b\r\nv\r\n"},
		{"mg e!CB5 b s\r\nmg Yw! b v\r\nmg ==== b v\r\n", "HD s1\r\nCLIENT_ERROR error decoding key\r\nCLIENT_ERROR error decoding key\r\n"},
	}},
	{"meta stale marks", []step{
		// An older cas with I stores a stale item that keeps the win
		// token's mark: no second W.
		{"ms first 1\r\nx\r\n", "HD\r\n"}, // version 1: C1 below is older than s
		{"mg s N30\r\nms s 1 I C1\r\nx\r\nmg s v\r\n", "HD W\r\nHD\r\nVA 1 Z X\r\nx\r\n"},
		// So it does when E names the stale item's cas unique.
		{"mg se N30 E5000000001\r\nms se 1 I C5000000000 E5000000001\r\nx\r\nmg se c v\r\n", "HD W\r\nHD\r\nVA 1 c5000000001 Z X\r\nx\r\n"},
		// md I marks the item stale; it stays fetched and can be won again.
		{"ms h 1\r\nx\r\nmg h v\r\nmd h I\r\nmg h h\r\n", "HD\r\nVA 1\r\nx\r\nHD\r\nHD h1 X W\r\n"},
		{"ms hx 1\r\nx\r\nmg hx v\r\nmd hx I x\r\nmg hx h v\r\nmg hx h\r\n", "HD\r\nVA 1\r\nx\r\nHD\r\nVA 0 h0 X W\r\n\r\nHD h1 Z X\r\n"},
		// C0 checks nothing for an append, and is no older cas for I.
		{"ms ap 1\r\nx\r\nms ap 1 MA C0\r\ny\r\nms ap 1 I C0\r\nz\r\nmg ap v\r\n", "HD\r\nHD\r\nEX\r\nVA 2\r\nxy\r\n"},
	}},
	{"mg touch", []step{
		{"ms gk 4 T100\r\nooom\r\nmg gk s v T300 t\r\n", "HD\r\nVA 4 s4 t300\r\nooom\r\n"},
		{"mg gk T-1 v\r\nmg gk v\r\n", "VA 4\r\nooom\r\nEN\r\n"},
	}},
	{"okdb cursor", []step{
		{"set p:1 1 0 1\r\na\r\nset p:2 2 0 1\r\nb\r\nset p:3 3 0 1\r\nc\r\nset q 0 0 1\r\nd\r\nset p 0 0 1\r\ne\r\n", strings.Repeat("STORED\r\n", 5)},
		{"get ?type=cursor&prefix=p:&limit=2\r\n", "VALUE p:1 1 1\r\na\r\nVALUE p:2 2 1\r\nb\r\nEND\r\n"},
		{"get ?type=cursor&prefix=p%3A\r\n", "VALUE p:1 1 1\r\na\r\nVALUE p:2 2 1\r\nb\r\nVALUE p:3 3 1\r\nc\r\nEND\r\n"},
		{"get ?type=cursor&prefix=p:&start=p:2%00\r\n", "VALUE p:3 3 1\r\nc\r\nEND\r\n"},
		{"get ?type=cursor&prefix=zz\r\n", "END\r\n"},
		{"get ?type=cursor&prefix=p:&limit=0\r\n", "CLIENT_ERROR bad cursor limit\r\n"},
		{"get ?type=cursor&prefix=p:&limit=x\r\n", "CLIENT_ERROR bad cursor limit\r\n"},
		{"get ?type=cursor&prefix=%zz\r\n", "CLIENT_ERROR bad cursor query\r\n"},
		{"get ?type=cursor&prefix=%FF\r\n", "CLIENT_ERROR bad cursor prefix\r\n"},
		{"get q ?type=cursor&prefix=p:&limit=1 p\r\n", "VALUE q 0 1\r\nd\r\nVALUE p:1 1 1\r\na\r\nVALUE p 0 1\r\ne\r\nEND\r\n"},
	}},
}

func TestText(t *testing.T) {
	for _, tc := range textCases {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t)
			c := ts.dial(t)
			for _, st := range tc.steps {
				c.do(st.req, st.want)
			}
		})
	}
}

// casOf returns the cas unique gets reports for key.
func casOf(t *testing.T, c *rawClient, key string) uint64 {
	t.Helper()
	c.send("gets " + key + "\r\n")
	l := c.line()
	f := strings.Fields(l)
	if len(f) != 5 || f[0] != "VALUE" {
		t.Fatalf("gets %s: %q", key, l)
	}
	n, err := strconv.Atoi(f[3])
	if err != nil {
		t.Fatal(err)
	}
	c.read(n + 2)
	if e := c.line(); e != "END\r\n" {
		t.Fatalf("gets %s: %q", key, e)
	}
	cas, err := strconv.ParseUint(f[4], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return cas
}

func TestCas(t *testing.T) {
	ts := startServer(t)
	c := ts.dial(t)
	c.do("set k 1 0 2\r\nv1\r\n", "STORED\r\n")
	cas := casOf(t, c, "k")
	c.do(fmt.Sprintf("cas k 2 0 2 %d\r\nv2\r\n", cas+1), "EXISTS\r\n")
	c.do(fmt.Sprintf("cas k 2 0 2 %d\r\nv2\r\n", cas), "STORED\r\n")
	c.do(fmt.Sprintf("cas k 3 0 2 %d\r\nv3\r\n", cas), "EXISTS\r\n")
	c.do("get k\r\n", "VALUE k 2 2\r\nv2\r\nEND\r\n")
	cas2 := casOf(t, c, "k")
	if cas2 <= cas {
		t.Fatalf("cas unique did not grow: %d then %d", cas, cas2)
	}
	c.do("cas k 0 0 1 0\r\nx\r\n", "EXISTS\r\n")
	c.do("delete k\r\n", "DELETED\r\n")
	c.do(fmt.Sprintf("cas k 2 0 2 %d\r\nv2\r\n", cas2), "NOT_FOUND\r\n")

	// Meta cas: EX reports c0; a match stores and returns the new cas.
	c.do("ms m 2\r\nbo\r\n", "HD\r\n")
	mc := metaCas(t, c, "m")
	c.do(fmt.Sprintf("ms m 2 c C%d\r\nio\r\n", mc+10), "EX c0\r\n")
	c.send(fmt.Sprintf("ms m 2 c C%d\r\nio\r\n", mc))
	l := c.line()
	if !regexp.MustCompile(`^HD c\d+\r\n$`).MatchString(l) {
		t.Fatalf("ms with matching cas: %q", l)
	}
	if got, want := l, fmt.Sprintf("HD c%d\r\n", metaCas(t, c, "m")); got != want {
		t.Fatalf("ms c returned %q, mg c says %q", got, want)
	}
	// md with a cas; mg with C of the current cas omits the value.
	mc = metaCas(t, c, "m")
	c.do(fmt.Sprintf("mg m v C%d\r\n", mc), "HD\r\n")
	c.do(fmt.Sprintf("mg m v C%d\r\n", mc+1), "VA 2\r\nio\r\n")
	c.do(fmt.Sprintf("md m C%d\r\n", mc+1), "EX\r\n")
	c.do(fmt.Sprintf("md m C%d\r\n", mc), "HD\r\n")
	// ma with a cas.
	c.do("ma mc N0 v\r\n", "VA 1\r\n0\r\n")
	ac := metaCas(t, c, "mc")
	c.do(fmt.Sprintf("ma mc C%d v\r\n", ac+1), "EX\r\n")
	c.send(fmt.Sprintf("ma mc C%d c v\r\n", ac))
	l = c.line()
	if v := c.line(); v != "1\r\n" {
		t.Fatalf("ma value %q", v)
	}
	if want := fmt.Sprintf("VA 1 c%d\r\n", metaCas(t, c, "mc")); l != want {
		t.Fatalf("ma c: got %q, want %q", l, want)
	}
	// ms I with an older cas stores a stale item.
	c.do("ms st 1\r\na\r\n", "HD\r\n")
	old := metaCas(t, c, "st")
	c.do("ms st 1\r\nb\r\n", "HD\r\n")
	c.do(fmt.Sprintf("ms st 1 I C%d\r\nc\r\n", old), "HD\r\n")
	c.do("mg st v\r\n", "VA 1 X W\r\nc\r\n")
	c.do(fmt.Sprintf("ms st 1 I C%d\r\nd\r\n", casOf(t, c, "st")+5), "EX\r\n")
}

// metaCas returns the cas mg reports for key.
func metaCas(t *testing.T, c *rawClient, key string) uint64 {
	t.Helper()
	c.send("mg " + key + " c\r\n")
	l := c.line()
	var cas uint64
	if _, err := fmt.Sscanf(l, "HD c%d\r\n", &cas); err != nil {
		t.Fatalf("mg %s c: %q: %v", key, l, err)
	}
	return cas
}

func TestExpiryRules(t *testing.T) {
	ts := startServer(t)
	c := ts.dial(t)
	now := time.Now().Unix()
	// Up to 30 days is relative; beyond is a Unix time.
	c.do(fmt.Sprintf("set rel 0 %d 1\r\nx\r\nmg rel t\r\n", relativeExpiryLimit), fmt.Sprintf("STORED\r\nHD t%d\r\n", relativeExpiryLimit))
	c.send(fmt.Sprintf("set abs 0 %d 1\r\nx\r\nmg abs t\r\n", now+1000))
	if l := c.line(); l != "STORED\r\n" {
		t.Fatal(l)
	}
	l := c.line()
	var ttl int64
	if _, err := fmt.Sscanf(l, "HD t%d\r\n", &ttl); err != nil || ttl < 990 || ttl > 1001 {
		t.Fatalf("absolute exptime: %q", l)
	}
	// A short TTL really expires.
	c.do("set short 0 1 1\r\nx\r\n", "STORED\r\n")
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.send("get short\r\n")
		if l := c.line(); l == "END\r\n" {
			break
		} else if l != "VALUE short 0 1\r\n" {
			t.Fatalf("get short: %q", l)
		}
		c.read(len("x\r\nEND\r\n"))
		if time.Now().After(deadline) {
			t.Fatal("item with a 1 s TTL still there after 5 s")
		}
		time.Sleep(50 * time.Millisecond) // polling for expiry, not synchronisation
	}
}

func TestStats(t *testing.T) {
	ts := startServer(t)
	c := ts.dial(t)
	c.do("set a 0 0 1\r\nx\r\nget a b\r\nincr a 1\r\ndelete a\r\ndelete a\r\ntouch a 1\r\n",
		"STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nDELETED\r\nNOT_FOUND\r\nNOT_FOUND\r\n")
	st := stats(t, c, "")
	for k, want := range map[string]string{
		"cmd_get": "2", "get_hits": "1", "get_misses": "1", "cmd_set": "1",
		"delete_hits": "1", "delete_misses": "1", "touch_misses": "1", "cmd_touch": "1",
		"total_items": "1", "curr_connections": "1", "version": MemcachedVersion,
		"max_connections": strconv.Itoa(DefaultMaxConns), "cmd_meta": "1",
	} {
		if st[k] != want {
			t.Errorf("stats %s = %q, want %q", k, st[k], want)
		}
	}
	// mg with T on a missing key is a get miss, and an ma that creates
	// its item neither a hit nor a miss, as in memcached.
	c.do("stats reset\r\nmg nokey T10\r\nma newn N0\r\nma newn\r\n", "RESET\r\nEN\r\nHD\r\nHD\r\n")
	st2 := stats(t, c, "")
	for k, want := range map[string]string{"cmd_get": "1", "get_misses": "1", "cmd_touch": "0", "touch_misses": "0",
		"incr_hits": "1", "incr_misses": "0"} {
		if st2[k] != want {
			t.Errorf("after mg T on a miss and ma N: stats %s = %q, want %q", k, st2[k], want)
		}
	}
	if n, _ := strconv.Atoi(st["bytes_read"]); n < 50 {
		t.Errorf("bytes_read = %q", st["bytes_read"])
	}
	set := stats(t, c, "settings")
	if set["item_size_max"] != strconv.Itoa(DefaultMaxItemSize) || set["tcpport"] == "0" || set["cas_enabled"] != "yes" {
		t.Errorf("stats settings: %v", set)
	}
	c.do("stats reset\r\n", "RESET\r\n")
	if st := stats(t, c, ""); st["cmd_get"] != "0" {
		t.Errorf("after reset cmd_get = %q", st["cmd_get"])
	}
}

// stats runs "stats [arg]" and returns its STAT lines as a map.
func stats(t *testing.T, c *rawClient, arg string) map[string]string {
	t.Helper()
	cmd := "stats"
	if arg != "" {
		cmd += " " + arg
	}
	c.send(cmd + "\r\n")
	m := map[string]string{}
	for {
		l := c.line()
		if l == "END\r\n" {
			return m
		}
		f := strings.SplitN(strings.TrimSuffix(l, "\r\n"), " ", 3)
		if len(f) != 3 || f[0] != "STAT" {
			t.Fatalf("stats line %q", l)
		}
		m[f[1]] = f[2]
	}
}

func TestConnectionClosing(t *testing.T) {
	ts := startServer(t)
	t.Run("quit", func(t *testing.T) {
		c := ts.dial(t)
		c.send("set a 0 0 1\r\nx\r\nquit\r\nget a\r\n")
		c.expectClosed("STORED\r\n")
	})
	t.Run("http request", func(t *testing.T) {
		c := ts.dial(t)
		c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		c.expectClosed("")
	})
	t.Run("line too long", func(t *testing.T) {
		c := ts.dial(t)
		c.send("set " + strings.Repeat("x", 3000))
		c.expectClosed("CLIENT_ERROR line too long\r\n")
	})
	t.Run("long multiget is allowed", func(t *testing.T) {
		c := ts.dial(t)
		c.do("set k1 0 0 1\r\nx\r\n", "STORED\r\n")
		keys := make([]string, 600)
		for i := range keys {
			keys[i] = fmt.Sprintf("k%d", i)
		}
		c.do("get "+strings.Join(keys, " ")+"\r\n", "VALUE k1 0 1\r\nx\r\nEND\r\n")
	})
	t.Run("overlong multiget", func(t *testing.T) {
		c := ts.dial(t)
		c.send("get " + strings.Repeat("k ", MaxGetLineLength))
		c.expectClosed("CLIENT_ERROR line too long\r\n")
	})
	t.Run("server still serves", func(t *testing.T) {
		c := ts.dial(t)
		c.do("get a\r\n", "VALUE a 0 1\r\nx\r\nEND\r\n")
	})
}

func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.IdleTimeout = 100 * time.Millisecond })
	c := ts.dial(t)
	c.do("version\r\n", "VERSION "+MemcachedVersion+"\r\n")
	c.expectClosed("")
	c2 := ts.dial(t)
	if st := stats(t, c2, ""); st["idle_kicks"] != "1" {
		t.Fatalf("idle_kicks = %q", st["idle_kicks"])
	}
}

func TestMaxConns(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.MaxConns = 2 })
	a, b := ts.dial(t), ts.dial(t)
	a.do("version\r\n", "VERSION "+MemcachedVersion+"\r\n")
	b.do("version\r\n", "VERSION "+MemcachedVersion+"\r\n")
	c := ts.dial(t)
	c.expectClosed("ERROR Too many open connections\r\n")
	a.c.Close()
	// The slot frees once the server notices; retry until it does.
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := ts.dial(t)
		d.send("version\r\n")
		d.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		l, err := d.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if l == "VERSION "+MemcachedVersion+"\r\n" {
			if st := stats(t, d, ""); st["rejected_connections"] == "0" {
				t.Fatal("rejected_connections not counted")
			}
			return
		}
		if l != "ERROR Too many open connections\r\n" || time.Now().After(deadline) {
			t.Fatalf("got %q", l)
		}
		d.c.Close()
		time.Sleep(10 * time.Millisecond) // waiting for the server to see the close
	}
}

func TestPassword(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.Password = "s3cret" })
	c := ts.dial(t)
	c.send("get a\r\n")
	if l := c.line(); l != "CLIENT_ERROR unauthenticated\r\n" {
		t.Fatal(l)
	}
	c.send("set auth 0 0 10\r\nuser wrong\r\n")
	if l := c.line(); l != "CLIENT_ERROR authentication failure\r\n" {
		t.Fatal(l)
	}
	c.send("set auth 0 0 11\r\nuser s3cret\r\n")
	if l := c.line(); l != "STORED\r\n" {
		t.Fatal(l)
	}
	c.do("get auth\r\n", "END\r\n")
	st := stats(t, c, "")
	if st["auth_cmds"] != "2" || st["auth_errors"] != "1" {
		t.Fatalf("auth stats: %s %s", st["auth_cmds"], st["auth_errors"])
	}
}

func TestProtectedMode(t *testing.T) {
	db := openDB(t)
	s := &Server{DB: db}
	s.init()
	for _, tc := range []struct {
		addr     string
		loopback bool
	}{
		{"127.0.0.1:1", true}, {"[::1]:1", true}, {"10.0.0.1:1", false}, {"192.168.1.1:5", false},
	} {
		a, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := isLoopback(a); got != tc.loopback {
			t.Errorf("isLoopback(%s) = %v", tc.addr, got)
		}
	}
	// A non-loopback client (simulated over a pipe with a fake address)
	// is refused.
	server, client := net.Pipe()
	go s.accept(&fakeAddrConn{Conn: server, remote: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5}})
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(client)
	if !strings.HasPrefix(string(b), "SERVER_ERROR protected mode") {
		t.Fatalf("got %q", b)
	}
	t.Cleanup(func() { s.Close(); db.Close() })
}

// fakeAddrConn reports a chosen remote address.
type fakeAddrConn struct {
	net.Conn
	remote net.Addr
}

func (c *fakeAddrConn) RemoteAddr() net.Addr { return c.remote }

// TestLargeMultiGet checks that a multi-get larger than the output buffer
// is streamed intact.
func TestLargeMultiGet(t *testing.T) {
	ts := startServer(t)
	c := ts.dial(t)
	var want strings.Builder
	var keys []string
	for i := range 6 {
		v := strings.Repeat(string(rune('a'+i)), 300<<10)
		k := fmt.Sprintf("big%d", i)
		c.do(fmt.Sprintf("set %s %d 0 %d\r\n%s\r\n", k, i, len(v), v), "STORED\r\n")
		keys = append(keys, k)
		fmt.Fprintf(&want, "VALUE %s %d %d\r\n%s\r\n", k, i, len(v), v)
	}
	want.WriteString("END\r\n")
	c.do("get "+strings.Join(keys, " ")+"\r\n", want.String())
}

// TestTouchKeepsCas: touch, gat, gats and mg T change only the expiry, and
// the item keeps its cas unique and access marks, as in memcached, though
// the engine rewrites the key at a new version.
func TestTouchKeepsCas(t *testing.T) {
	ts := startServer(t)
	c := ts.dial(t)
	c.do("set k 1 0 2\r\nv1\r\n", "STORED\r\n")
	cas := casOf(t, c, "k")
	c.do("touch k 100\r\n", "TOUCHED\r\n")
	c.do("gat 200 k\r\n", "VALUE k 1 2\r\nv1\r\nEND\r\n")
	c.do("gats 300 k\r\n", fmt.Sprintf("VALUE k 1 2 %d\r\nv1\r\nEND\r\n", cas))
	c.do("mg k T400 c t h\r\n", fmt.Sprintf("HD c%d t400 h1\r\n", cas))
	if got := casOf(t, c, "k"); got != cas {
		t.Fatalf("cas unique %d after touches, was %d", got, cas)
	}
	c.do(fmt.Sprintf("cas k 1 0 2 %d\r\nv2\r\n", cas), "STORED\r\n")
	if got := casOf(t, c, "k"); got == cas {
		t.Fatal("a new value kept the cas unique")
	}
}

// TestMetaRecache: R wins the token when the TTL, in whole seconds as
// memcached counts, is below R's, as the N and T before R set it.
func TestMetaRecache(t *testing.T) {
	ts := startServer(t)
	c := ts.dial(t)
	c.do("set c 0 0 1\r\n1\r\nmg c R3000 T2000\r\nmg c t\r\n", "STORED\r\nHD\r\nHD t2000\r\n")
	c.do("set c 0 0 1\r\n1\r\nmg c T2000 R3000\r\nmg c t\r\n", "STORED\r\nHD W\r\nHD t2000 Z\r\n")
	c.do("set c 0 1000 1\r\n1\r\nmg c R1001 T2000\r\n", "STORED\r\nHD W\r\n")
	// An item that expires at second E, and R naming E: not below.
	for range 5 {
		start := time.Now()
		e := start.Unix() + 1000
		c.do(fmt.Sprintf("set r 0 %d 1\r\n1\r\n", e), "STORED\r\n")
		c.send("mg r R1000\r\n")
		l := c.line()
		if time.Now().Unix() != start.Unix() {
			continue // a second passed: R1000 may be later than E
		}
		if l != "HD\r\n" {
			t.Fatalf("mg R1000 on an item expiring in 1000 s: %q, want HD", l)
		}
		return
	}
}

// TestMetaE: E names the cas unique of the item a command writes.
func TestMetaE(t *testing.T) {
	ts := startServer(t)
	c := ts.dial(t)
	c.do("ms k 2 E900 c\r\nv1\r\n", "HD c900\r\n")
	c.do("mg k c v\r\n", "VA 2 c900\r\nv1\r\n")
	c.do("gets k\r\n", "VALUE k 0 2 900\r\nv1\r\nEND\r\n")
	c.do("ms k 2 C899\r\nv2\r\n", "EX\r\n")
	c.do("ms k 2 C900 E901\r\nv2\r\n", "HD\r\n")
	c.do("ma n N0 E50 c\r\nma n E51 c v\r\n", "HD c50\r\nVA 1 c51\r\n1\r\n")
	c.do("mg v E60 c N30\r\nmg v c\r\ngets v\r\nmg v E61 c\r\n", "HD c60 W\r\nHD c60 Z\r\nVALUE v 0 0 60\r\n\r\nEND\r\nHD c60 Z\r\n")
	c.do("md k C901 I E902\r\nmg k c\r\n", "HD\r\nHD c902 X W\r\n")
	// E0 makes the cas unique 0 where memcached does (mg N, ma, md I
	// and x; ms takes E0 for none). md and mg C0 then match it; a cas or
	// ms C of 0 matches nothing.
	c.do("mg z N0 E0 c\r\nmg z c v C0\r\ngets z\r\n", "HD c0 W\r\nHD c0 Z\r\nVALUE z 0 0 0\r\n\r\nEND\r\n")
	c.do("ma zn N0 E0 c\r\nma zn E0 c v\r\n", "HD c0\r\nVA 1 c0\r\n1\r\n")
	c.do("ms zd 1\r\nx\r\nmd zd I E0\r\nmg zd c\r\nmd zd C0 x E0\r\nmg zd c\r\n", "HD\r\nHD\r\nHD c0 X W\r\nHD\r\nHD c0\r\n")
	c.do("ms ze 1\r\nx\r\nmd ze x E0\r\nmg ze c\r\ncas ze 0 0 1 0\r\ny\r\nms ze 1 C0\r\nz\r\nmd ze C0\r\n", "HD\r\nHD\r\nHD c0\r\nEXISTS\r\nEX\r\nHD\r\n")
	c.send("ms zs 1 E0 c\r\nx\r\n")
	if l := c.line(); l == "HD c0\r\n" {
		t.Fatalf("ms E0: %q, want a cas unique of its own", l)
	}
	// An item stored with a TTL in the past (the engine keeps nothing)
	// still gets a cas unique, as in memcached; never c0.
	for _, req := range []string{"ms gone 1 T-1 c\r\ny\r\n", "ma gone N-1 c\r\n", "mg gone N-1 c\r\n"} {
		c.send(req)
		if l := c.line(); !regexp.MustCompile(`^HD c[1-9][0-9]* ?W?\r\n$`).MatchString(l) {
			t.Fatalf("%q: %q, want a cas unique", req, l)
		}
	}
	// md x leaves an empty item with the cas unique of the one it
	// replaces, or E's.
	c.do("ms x 2 E910\r\nv1\r\nmd x x\r\nmg x c v\r\n", "HD\r\nHD\r\nVA 0 c910\r\n\r\n")
	c.do("md x x E911 F3\r\nmg x c f s\r\n", "HD\r\nHD c911 f3 s0\r\n")
	c.do("ms y 1\r\na\r\n", "HD\r\n")
	cy := metaCas(t, c, "y")
	c.do("md y x\r\n", "HD\r\n")
	c.do(fmt.Sprintf("ms y 1 C%d\r\nb\r\nmg y v\r\n", cy), "HD\r\nVA 1\r\nb\r\n")
	// Written by another protocol (here the embedded API), the key's cas
	// unique is its version again.
	if err := ts.db.Set([]byte("k"), []byte("v3")); err != nil {
		t.Fatal(err)
	}
	if got := casOf(t, c, "k"); got == 902 {
		t.Fatal("cas unique survived a write")
	}
	// A named cas unique lives in memory: flush_all (or a restart)
	// forgets it, and a cas with it then fails, never overwrites.
	c.do("ms e 1 E777\r\nx\r\nflush_all\r\nms e 1\r\ny\r\n", "HD\r\nOK\r\nHD\r\n")
	c.do("ms e 1 C777\r\nz\r\nmg e v\r\n", "EX\r\nVA 1\r\ny\r\n")
}

// A pipeline of sets is committed as one group (one fsync under
// SyncAlways), with every reply in order around the other commands, and
// the connection reads its own writes.
func TestPipelinedSetsShareACommit(t *testing.T) {
	db, err := caskade.Open(t.TempDir(), &caskade.Options{Sync: caskade.SyncAlways, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerDB(t, db, false)
	c := ts.dial(t)
	c.do("set warm 0 0 1\r\nw\r\n", "STORED\r\n")
	before := db.Stats()
	var req strings.Builder
	for i := range 100 {
		fmt.Fprintf(&req, "set k%03d 0 0 5 noreply\r\nv%04d\r\n", i, i)
	}
	req.WriteString("set last 0 0 1\r\nx\r\nset bad 0 0 zz\r\nset after 0 0 1\r\ny\r\nget k000 k099 last after\r\n")
	c.do(req.String(), lines(
		"STORED",
		"CLIENT_ERROR bad command line format",
		"STORED",
		"VALUE k000 0 5", "v0000",
		"VALUE k099 0 5", "v0099",
		"VALUE last 0 1", "x",
		"VALUE after 0 1", "y",
		"END"))
	after := db.Stats()
	commits, groups := after.Commits-before.Commits, after.Groups-before.Groups
	if commits != 102 {
		t.Fatalf("%d commits for 102 sets", commits)
	}
	// The request may arrive in a few reads; without deferral it takes
	// one group per set.
	if groups > 10 {
		t.Fatalf("102 pipelined sets took %d group commits", groups)
	}
	t.Logf("102 pipelined sets: %d group commits", groups)

	// Quiet meta sets join the run; a set with a flag that needs the
	// store's outcome (I) commits it first; an error reply between two
	// deferred sets keeps its place.
	before = db.Stats()
	req.Reset()
	for i := range 100 {
		fmt.Fprintf(&req, "ms m%03d 2 q F%d\r\nv%d\r\n", i, i, i%10)
	}
	req.WriteString("ms inv 2 q I\r\nvi\r\nset t1 0 0 2\r\nt1\r\nms m4 bad\r\nset t2 0 0 2\r\nt2\r\nmg m007 v f\r\nmg inv v\r\n")
	c.do(req.String(), lines(
		"STORED",
		"CLIENT_ERROR bad command line format",
		"STORED",
		"VA 2 f7", "v7",
		"VA 2", "vi"))
	after = db.Stats()
	if commits, groups := after.Commits-before.Commits, after.Groups-before.Groups; commits != 103 || groups > 10 {
		t.Fatalf("103 pipelined sets: %d commits in %d group commits", commits, groups)
	}
}

// When the group commit of a run of pipelined sets fails, each set is
// answered with the error in its place (nothing for noreply), and the
// sets are not stored.
func TestPipelinedSetsFailTogether(t *testing.T) {
	efs := errorfs.New(vfs.NewMem())
	db, err := caskade.Open("db", &caskade.Options{FS: efs, Sync: caskade.SyncAlways, MergeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(nil)
	ts := startServerDB(t, db, false, func(s *Server) { s.Metrics = m })
	c := ts.dial(t)
	c.do("set before 0 0 1\r\nb\r\n", "STORED\r\n")
	efs.Inject(errorfs.OpSync, syscall.EIO)
	const stopped = "SERVER_ERROR writes stopped after an I/O error"
	c.do("set a 0 0 1\r\nx\r\nset b 0 0 1 noreply\r\ny\r\nset c 0 0 zz\r\nset d 0 0 1\r\nz\r\nget a b d before\r\n",
		lines(stopped, "CLIENT_ERROR bad command line format", stopped, "VALUE before 0 1", "b", "END"))
	// Each deferred set is counted once, when its commit ends, and its
	// failed commit as its error (the malformed set failed on its own).
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`caskade_commands_total{command="set",protocol="memcache"} 5`,
		`caskade_command_errors_total{command="set",protocol="memcache"} 4`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestCursorSkipLimit checks that a cursor request skips a bounded number
// of keys it cannot list: a page ends early once it has listed some, and
// a request that meets only such keys is refused rather than answered as
// if the prefix held nothing more.
func TestCursorSkipLimit(t *testing.T) {
	ts := startServer(t, func(s *Server) { s.cursorSkips = 5 })
	set := func(k string) {
		t.Helper()
		if err := ts.db.Set([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	set("p:a")
	for i := range 10 {
		set(fmt.Sprintf("p:b %d", i)) // a space: cannot be listed
	}
	set("p:c")
	c := ts.dial(t)
	c.do("get ?type=cursor&prefix=p:\r\n", "VALUE p:a 0 1\r\nv\r\nEND\r\n")
	c.do("get ?type=cursor&prefix=p:&start=p:a%00\r\n", errCursorSkips+"\r\n")
	c.do("get ?type=cursor&prefix=p:&start=p:b%209%00\r\n", "VALUE p:c 0 1\r\nv\r\nEND\r\n")
}

// TestTTLFarAhead: an expiry more than 292 years ahead (which a Redis
// PEXPIREAT can set, and which a time.Duration cannot hold) is reported
// by mg t as the seconds left, not a negative
// number that reads as "never expires" or "expired".
func TestTTLFarAhead(t *testing.T) {
	ts := startServer(t)
	exp := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := ts.db.SetEntry([]byte("far"), []byte("v"), caskade.SetOptions{ExpiresAt: exp}); err != nil {
		t.Fatal(err)
	}
	c := ts.dial(t)
	before := time.Now()
	c.send("mg far t\r\n")
	l := c.line()
	after := time.Now()
	var ttl int64
	if _, err := fmt.Sscanf(l, "HD t%d\r\n", &ttl); err != nil {
		t.Fatalf("mg far t: %q: %v", l, err)
	}
	if lo, hi := exp.Unix()-after.Unix()-1, exp.Unix()-before.Unix()+1; ttl < lo || ttl > hi {
		t.Fatalf("mg far t: ttl %d, want %d..%d", ttl, lo, hi)
	}
}
