package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/core/domain/apperr"
)

// maxBodyBytes bounds every request body; admin requests are small.
const maxBodyBytes = 1 << 20

// decodeJSON reads the body as exactly one JSON object into dst. Unknown fields are ignored
// (clients may be newer than the server); a wrong type, trailing data or an empty body is
// 40001, a body over 1 MiB is 41301.
func decodeJSON(c echo.Context, dst any) error {
	body := http.MaxBytesReader(c.Response(), c.Request().Body, maxBodyBytes)
	dec := json.NewDecoder(body)
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return decodeError(err)
		}
		return apperr.New(apperr.InvalidArgument, "request body must hold one JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var (
		tooLarge  *http.MaxBytesError
		typeErr   *json.UnmarshalTypeError
		syntaxErr *json.SyntaxError
	)
	switch {
	case errors.As(err, &tooLarge):
		return apperr.Wrap(apperr.TooLarge, "request body exceeds 1 MiB", err)
	case errors.Is(err, io.EOF):
		return apperr.New(apperr.InvalidArgument, "request body must be a JSON object")
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return apperr.Wrap(apperr.InvalidArgument, fmt.Sprintf("field %s must be %s", typeErr.Field, jsonKind(typeErr.Type.Kind())), err)
	case errors.As(err, &typeErr):
		return apperr.Wrap(apperr.InvalidArgument, "request body must be a JSON object", err)
	case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.Wrap(apperr.InvalidArgument, "malformed JSON", err)
	}
	return apperr.Wrap(apperr.InvalidArgument, "unreadable request body", err)
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}
