// Package resp reads and writes the Redis serialization protocol, RESP2 and
// RESP3, for the caskade Redis front end (server side) and the Go client.
//
// # Reading
//
// A [Reader] wraps a [bufio.Reader] and offers two sets of methods:
//
//   - [Reader.ReadCommand] reads one client request, multibulk
//     (*N\r\n$len\r\narg\r\n...) or inline (a space-separated line, as
//     redis-cli and telnet send), with Redis's limits and Redis's exact
//     protocol error texts (see [ProtocolError]).
//   - [Reader.ReadValue] reads one complete reply of any RESP2 or RESP3 type
//     into a [Value] tree; [Reader.PeekKind], [Reader.ReadHeader],
//     [Reader.ReadBlob] and [Reader.SkipValue] decode a reply piece by piece
//     without building a tree.
//
// Byte slices returned by a Reader point into memory the Reader owns and
// reuses: they are valid only until the next call of a Read, Peek, Skip or
// Reset method on the same Reader. Copy what must be kept (see
// [Value.Clone]). In exchange, reading small commands and replies allocates
// nothing in the steady state. A Reader never allocates for a length a peer
// merely declares: buffers grow as data arrives.
//
// A Reader is not safe for concurrent use. After any error other than one
// returned before the first byte of a command or reply was consumed (for
// example an idle read timeout), the stream position is unknown and the
// Reader keeps returning that error until [Reader.Reset].
//
// # Writing
//
// The Append functions ([AppendBulk], [AppendInt], [AppendArrayHeader],
// [AppendCommand], ...) append one encoded element to a byte slice and
// return the extended slice, like [strconv.AppendInt]; they allocate only
// when the slice must grow. Functions taking a proto argument write the
// RESP3 form when proto is 3 or more and the RESP2 form Redis uses
// otherwise. They are safe for concurrent use on distinct slices.
package resp
