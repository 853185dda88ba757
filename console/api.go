package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"log"
	"net/http"
)

// apiHandler answers JSON, or an error as {"error": …} with its status.
type apiHandler func(r *http.Request) (any, error)

// api writes v as JSON. encoding/json escapes <, > and & in strings, so no
// database value can close a tag if a browser ever read it as HTML (and
// nosniff forbids that).
func (c *console) api(h apiHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := h(r)
		status := http.StatusOK
		if err != nil {
			var br *badRequest
			var he *httpError
			switch {
			case errors.As(err, &br):
				status = http.StatusBadRequest
			case errors.As(err, &he):
				status = he.status
			default:
				status = http.StatusInternalServerError
				log.Printf("argo console: %s %s: %v", r.Method, r.URL.Path, err)
			}
			v = map[string]string{"error": err.Error()}
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(true)
		if err := enc.Encode(v); err != nil {
			http.Error(w, `{"error":"encoding failed"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write(buf.Bytes())
	}
}
