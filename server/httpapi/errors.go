package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"syscall"

	"github.com/caskade/caskade"
)

// errorBody is the JSON form of every error reply:
//
//	{"error": {"code": "not_found", "message": "key not found"}}
//
// The code is stable (clients switch on it); the message is for people.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"cannot encode reply"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{errorDetail{Code: code, Message: msg}})
}

// dbErrorStatus maps a database error to an HTTP status and error code.
func dbErrorStatus(err error) (int, string) {
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, errContended):
		return http.StatusConflict, "conflict"
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, "body_too_large"
	case errors.Is(err, caskade.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, caskade.ErrConflict):
		return http.StatusPreconditionFailed, "precondition_failed"
	case errors.Is(err, caskade.ErrKeyTooLarge):
		return http.StatusBadRequest, "key_too_large"
	case errors.Is(err, caskade.ErrValueTooLarge):
		return http.StatusRequestEntityTooLarge, "value_too_large"
	case errors.Is(err, caskade.ErrBatchTooLarge):
		return http.StatusRequestEntityTooLarge, "transaction_too_large"
	case errors.Is(err, caskade.ErrInvalidRange):
		return http.StatusBadRequest, "invalid_range"
	case errors.Is(err, caskade.ErrReadOnly):
		return http.StatusServiceUnavailable, "read_only"
	case errors.Is(err, caskade.ErrWritesStopped):
		return http.StatusServiceUnavailable, "writes_stopped"
	case errors.Is(err, syscall.ENOSPC):
		// The write was refused whole; it may be retried once there is
		// room (writes that stopped for it are writes_stopped above).
		return http.StatusInsufficientStorage, "no_space"
	case errors.Is(err, caskade.ErrClosed):
		return http.StatusServiceUnavailable, "closed"
	case errors.Is(err, caskade.ErrCommitUnknownResult):
		return http.StatusServiceUnavailable, "commit_unknown_result"
	}
	return http.StatusInternalServerError, "internal"
}

func (s *Server) writeDBError(w http.ResponseWriter, err error) {
	status, code := dbErrorStatus(err)
	writeError(w, status, code, s.errMessage(code, err))
}

// errMessage is the message of an error reply with code for err. The
// errors of a failed read or write name the server's files and system
// errors; a client has no use for them, so those replies say what
// happened and the server's log has the cause (the database logs the
// error that stopped its writes itself).
func (s *Server) errMessage(code string, err error) string {
	switch code {
	case "not_found":
		return "key not found"
	case "internal":
		s.log.Error("httpapi: request failed", "err", err)
		return "internal error (the server's log has the cause)"
	case "writes_stopped":
		return "writes stopped after a storage error (the server's log has the cause)"
	case "no_space":
		s.log.Warn("httpapi: write refused", "err", err)
		return "the disk is full: the write was refused whole"
	}
	return strings.TrimPrefix(err.Error(), "caskade: ")
}
