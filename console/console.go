package console

import (
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// Options configure the console.
type Options struct {
	// Inspector reads and changes argo's tables (required). The console
	// never changes it: each request works on a copy carrying the
	// request's operator.
	Inspector *runtime.Inspector
	// AllowWrites enables the actions. Default false: read-only, the
	// action forms are hidden and every POST is refused with 403.
	AllowWrites bool
	// Authenticate names the operator of a request; !ok answers 401 (with
	// Challenge as WWW-Authenticate when set). The name goes into the
	// operator trail. Default nil: every request is anonymous operator
	// AnonymousOperator.
	Authenticate func(r *http.Request) (operator string, ok bool)
	// Challenge is the WWW-Authenticate header sent with a 401, e.g.
	// `Basic realm="argo"` so that browsers ask for a password. Default "":
	// none.
	Challenge string
	// TraceURL links a task's trace id: "{traceId}" is replaced by it, e.g.
	// "https://traces.example/trace/{traceId}". Default "": no link.
	TraceURL string
	// SingleOperatorDiscard lets one operator discard a task at once
	// (Inspector.SingleOperatorDiscard; the trail records a discard
	// without review). Default false: a discard is a request that another
	// operator approves or rejects (Inspector.RequestDiscard). The console
	// authenticates its operators itself and connects as one database
	// account, so its approvals are checked by operator name only
	// (Inspector.SameAccountApproval).
	SingleOperatorDiscard bool
	// Now is the clock (tests fix it). Default time.Now.
	Now func() time.Time
	// CSRFKey signs the forms' CSRF tokens. Default: a random key per New,
	// so tokens die with the process; replicas behind one load balancer
	// must share a key of at least MinCSRFKeyLen bytes.
	CSRFKey []byte
	// PageSize is how many tasks the list shows per page. Default
	// DefaultPageSize; at most MaxPageSize.
	PageSize int
	// CountCap bounds the count on the list page and the overview's dead
	// letters (more shows as "N+"), so that they stay fast on large
	// tables. Default DefaultCountCap.
	CountCap int
	// BulkCap bounds how many tasks one bulk action touches. Default
	// DefaultBulkCap.
	BulkCap int
	// Window is the span of the overview's charts. Default DefaultWindow.
	Window time.Duration
	// Bucket is the width of one point of the overview's charts. Default
	// DefaultBucket.
	Bucket time.Duration
	// OverviewMaxAge is how long one read of the overview serves every
	// page and tab that asks (each open overview refreshes it every
	// RefreshInterval, and on a large table one read costs a few hundred
	// milliseconds of the database); any action taken through the console
	// forgets it. Default DefaultOverviewMaxAge; negative: read it for
	// every request.
	OverviewMaxAge time.Duration
	// Cipher holds the keys the task page decrypts arguments with
	// (docs/encryption.md). Default nil: encrypted arguments show as
	// "encrypted (key k2)", never in clear.
	Cipher *runtime.Cipher
}

// Defaults of Options.
const (
	// AnonymousOperator is the operator of every request when
	// Options.Authenticate is nil.
	AnonymousOperator = "console"
	DefaultPageSize   = 50
	MaxPageSize       = 500
	DefaultCountCap   = 10000
	DefaultBulkCap    = 10000
	DefaultWindow     = 6 * time.Hour
	DefaultBucket     = 10 * time.Minute
	// DefaultOverviewMaxAge is Options.OverviewMaxAge's default.
	DefaultOverviewMaxAge = 2 * time.Second
	// MinCSRFKeyLen is the shortest Options.CSRFKey accepted.
	MinCSRFKeyLen = 32
	// MaxFormBytes bounds the body of a POST.
	MaxFormBytes = 64 << 10
	// RefreshInterval is how often the pages refresh their live parts.
	RefreshInterval = 5 * time.Second
)

// console is the handler New returns.
type console struct {
	opts      Options
	csrf      csrfSigner
	mux       *http.ServeMux
	overviews overviewCache
}

// New returns the console's handler. Mount it with http.StripPrefix: its
// routes are "/", "/tasks", "/tasks/{id}", "/breakers/{group}/{action}", "/api/overview.json",
// "/api/tasks/{id}.json" and "/assets/…", and its links are relative.
func New(opts Options) (http.Handler, error) {
	if opts.Inspector == nil {
		return nil, errors.New("console: Options.Inspector is required (runtime.NewInspector or Runtime.Inspector)")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.OverviewMaxAge == 0 {
		opts.OverviewMaxAge = DefaultOverviewMaxAge
	}
	if opts.PageSize < 1 || opts.PageSize > MaxPageSize {
		return nil, errors.New("console: Options.PageSize must be between 1 and MaxPageSize (500)")
	}
	if opts.CountCap == 0 {
		opts.CountCap = DefaultCountCap
	}
	if opts.BulkCap == 0 {
		opts.BulkCap = DefaultBulkCap
	}
	if opts.CountCap < 1 || opts.BulkCap < 1 {
		return nil, errors.New("console: Options.CountCap and BulkCap must be positive (0 takes the default)")
	}
	if opts.Window == 0 {
		opts.Window = DefaultWindow
	}
	if opts.Bucket == 0 {
		opts.Bucket = DefaultBucket
	}
	if opts.Window < 0 || opts.Bucket <= 0 || opts.Bucket > opts.Window || opts.Window/opts.Bucket > 1000 {
		return nil, errors.New("console: Options.Window must be positive and hold between 1 and 1000 Buckets")
	}
	if opts.TraceURL != "" && !strings.Contains(opts.TraceURL, "{traceId}") {
		return nil, errors.New(`console: Options.TraceURL must contain "{traceId}" (e.g. "https://traces.example/trace/{traceId}")`)
	}
	key := opts.CSRFKey
	if key == nil {
		key = make([]byte, MinCSRFKeyLen)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	} else if len(key) < MinCSRFKeyLen {
		return nil, errors.New("console: Options.CSRFKey must hold at least MinCSRFKeyLen (32) bytes")
	}
	c := &console{opts: opts, csrf: csrfSigner{key: append([]byte(nil), key...)}, mux: http.NewServeMux()}
	c.routes()
	return c, nil
}

func (c *console) routes() {
	c.mux.HandleFunc("GET /{$}", c.page(c.overviewPage))
	c.mux.HandleFunc("GET /tasks", c.page(c.taskListPage))
	c.mux.HandleFunc("GET /tasks/{id}", c.page(c.taskPage))
	c.mux.HandleFunc("POST /tasks/{id}/{action}", c.page(c.taskAction))
	c.mux.HandleFunc("POST /tasks/bulk/{action}", c.page(c.bulkAction))
	c.mux.HandleFunc("POST /breakers/{group}/{action}", c.page(c.breakerAction))
	c.mux.HandleFunc("GET /api/overview.json", c.api(c.overviewJSON))
	c.mux.HandleFunc("GET /api/tasks/{file}", c.api(c.taskJSON))
	c.mux.Handle("GET /assets/", assetHandler())
}

// ServeHTTP sets the security headers, authenticates the request, refuses
// writes in read-only mode, then routes it.
func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	if r.URL.Path == "" {
		// Mounted as StripPrefix("/argo") and asked for "/argo": the
		// relative links need the trailing slash.
		w.Header().Set("Location", path.Base(requestPath(r))+"/")
		w.WriteHeader(http.StatusFound)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/assets/") {
		c.mux.ServeHTTP(w, r) // static and public: no data in them
		return
	}
	op, ok := c.authenticate(r)
	if !ok {
		if c.opts.Challenge != "" {
			w.Header().Set("WWW-Authenticate", c.opts.Challenge)
		}
		http.Error(w, "401 unauthorized: sign in to use the argo console", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if !c.opts.AllowWrites {
			http.Error(w, "403 forbidden: the console is read-only (the service enables actions with console.Options.AllowWrites, argoctl serve with -write)", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "400 bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
		if !c.csrf.valid(op, r.PostForm.Get(csrfField)) {
			http.Error(w, "403 forbidden: the form's CSRF token is missing or wrong (reload the page and try again)", http.StatusForbidden)
			return
		}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// The action changes what the overview shows: the page it
		// redirects to must not be served from before it.
		c.overviews.forget()
		defer c.overviews.forget()
	}
	c.mux.ServeHTTP(w, r.WithContext(withOperator(r.Context(), op)))
}

// authenticate returns the request's operator.
func (c *console) authenticate(r *http.Request) (string, bool) {
	if c.opts.Authenticate == nil {
		return AnonymousOperator, true
	}
	op, ok := c.opts.Authenticate(r)
	if !ok || strings.TrimSpace(op) == "" {
		return "", false
	}
	return op, true
}

// inspector is a copy of the shared Inspector acting as the request's
// operator, on the console's clock and discard review setting.
func (c *console) inspector(r *http.Request) *runtime.Inspector {
	in := *c.opts.Inspector
	in.Operator = operatorOf(r.Context())
	in.Now = c.opts.Now
	in.SingleOperatorDiscard = c.opts.SingleOperatorDiscard
	in.SameAccountApproval = true // one account for every operator: names decide
	if in.Source == "" {
		in.Source = "console" // refused changes are counted as the console's (docs/errors.md)
	}
	return &in
}

// requestPath is the path the client asked for, before any StripPrefix.
func requestPath(r *http.Request) string {
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil {
		return u.Path
	}
	return r.URL.Path
}
