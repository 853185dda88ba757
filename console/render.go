package console

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/argo-retry/argo/argotype"
)

//go:embed templates/*.html
var templateFiles embed.FS

// pages are the parsed templates, one set per page (the layout and the
// page's "content").
var pages = parsePages("overview.html", "tasks.html", "task.html", "confirm.html", "done.html", "error.html")

func parsePages(names ...string) map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, n := range names {
		out[n] = template.Must(template.New(n).Funcs(templateFuncs).ParseFS(templateFiles, "templates/layout.html", "templates/"+n))
	}
	return out
}

var templateFuncs = template.FuncMap{
	"millis":   fmtMillis,
	"time":     fmtTime,
	"duration": fmtDurationMs,
	"join":     strings.Join,
	"clip":     clip,
	// percent and taskProgress print reported progress (progress.go).
	"percent":      percent,
	"taskProgress": taskProgress,
	// pathSegment escapes a value for one segment of a link's path.
	"pathSegment": url.PathEscape,
}

// ListErrorChars is how much of a task's error text the list shows (its
// page shows all of it).
const ListErrorChars = 240

// clip cuts s to ListErrorChars characters, marking the cut with "…".
func clip(s string) string {
	r := []rune(s)
	if len(r) <= ListErrorChars {
		return s
	}
	return string(r[:ListErrorChars]) + "…"
}

// fmtMillis shows an instant of the tables in UTC ("-" for none).
func fmtMillis(m argotype.Millis) string {
	if m == 0 {
		return "-"
	}
	return fmtTime(m.Time())
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

func fmtDurationMs(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// page is what the layout needs of every page, and the page's own data.
type page struct {
	Title string
	// Root is the relative path from the page to the console's root
	// ("./", "../", …): every link and form starts with it.
	Root     string
	Operator string
	CSRF     string
	Writes   bool
	// Flash says what the last action did (FlashError: it was refused).
	Flash      string
	FlashError bool
	// Live names the JSON the page's script polls ("" for none).
	Live string
	// Charts loads the chart library.
	Charts bool
	Data   any
}

// rootOf is the relative path from the request's page to the console root.
func rootOf(r *http.Request) string {
	depth := strings.Count(r.URL.Path, "/") - 1
	if depth <= 0 {
		return "./"
	}
	return strings.Repeat("../", depth)
}

// newPage starts the page r answers with.
func (c *console) newPage(r *http.Request, title string, data any) *page {
	op := operatorOf(r.Context())
	return &page{Title: title, Root: rootOf(r), Operator: op, CSRF: c.csrf.token(op), Writes: c.opts.AllowWrites, Data: data}
}

// render writes page p with template name and status.
func render(w http.ResponseWriter, status int, name string, p *page) {
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		log.Printf("argo console: render %s: %v", name, err)
		http.Error(w, "500 internal error: the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// pageHandler answers a page, or returns an error: a *badRequest is a 400
// naming the mistake, an *httpError its status, anything else a 500.
type pageHandler func(w http.ResponseWriter, r *http.Request) error

// httpError is a refusal with its status and message.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func (c *console) page(h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		status := http.StatusInternalServerError
		msg := "the database could not be read: " + err.Error()
		var br *badRequest
		var he *httpError
		switch {
		case errors.As(err, &br):
			status, msg = http.StatusBadRequest, br.msg
		case errors.As(err, &he):
			status, msg = he.status, he.msg
		default:
			log.Printf("argo console: %s %s: %v", r.Method, r.URL.Path, err)
		}
		p := c.newPage(r, fmt.Sprintf("%d %s", status, http.StatusText(status)), msg)
		render(w, status, "error.html", p)
	}
}
