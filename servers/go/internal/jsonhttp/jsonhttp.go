// Package jsonhttp writes JSON responses and the contract's JSON error body
// ({"code": <status>, "message": "..."}), for the REST and GraphQL front ends.
package jsonhttp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// WriteError writes the contract's JSON error.
func WriteError(w http.ResponseWriter, status int, msg string) {
	Write(w, status, errorBody{Code: status, Message: msg})
}

// Write encodes v (on every call: nothing is cached) and writes it with its
// Content-Length.
func Write(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"code":500,"message":"response could not be encoded"}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
