// Package apperr carries the error codes of the wire contract (PROTOCOL §5) through the core,
// so every adapter maps a failure to the same code.
package apperr

import (
	"errors"
	"fmt"
)

// Code is a PROTOCOL §5 error code.
type Code int

const (
	OK              Code = 0
	InvalidArgument Code = 40001
	Unauthenticated Code = 40101
	Forbidden       Code = 40301
	NotFound        Code = 40401
	Conflict        Code = 40901
	TooLarge        Code = 41301
	RateLimited     Code = 42901
	Internal        Code = 50001
	Busy            Code = 50301
)

// Error is a failure with a contract code and a message safe to show to clients.
type Error struct {
	Code Code
	Msg  string
	Err  error // cause, for logs only
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %v", e.Code, e.Msg, e.Err)
	}
	return fmt.Sprintf("%d %s", e.Code, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error with a code and a client-facing message.
func New(code Code, msg string) *Error { return &Error{Code: code, Msg: msg} }

// Wrap attaches a code and client-facing message to a cause.
func Wrap(code Code, msg string, err error) *Error { return &Error{Code: code, Msg: msg, Err: err} }

// CodeOf returns the contract code of err: OK for nil, Internal for errors without one.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// MessageOf returns the client-facing message of err; internal causes are never exposed.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Msg
	}
	if err == nil {
		return "ok"
	}
	return "internal error"
}
