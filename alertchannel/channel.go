// Package alertchannel delivers argo's alerts where teams read them: a
// generic JSON webhook, the DingTalk, WeCom and Feishu/Lark group robots
// (signed where the platform signs), and SMTP e-mail.
//
// Each constructor (NewWebhook, NewDingTalk, NewWeCom, NewFeishu, NewEmail)
// returns a *Channel, a runtime.AlertChannel: name it in
// runtime.Config.AlertChannels and in a directive's alert-channel= key.
//
//	ding, err := alertchannel.NewDingTalk(alertchannel.DingTalkConfig{WebhookURL: url, Secret: secret})
//	defer ding.Close(ctx) // sends the summaries of open windows
//	rt, err := runtime.Start(ctx, runtime.Config{DSN: dsn, AlertChannels: map[string]runtime.AlertChannel{"ops": ding}})
//
// Every channel shares the same machinery (Options):
//
//   - a message template (text/template over Message; DefaultTemplate),
//     checked when the channel is made;
//   - grouping per task name: the first alert of a name goes out at once;
//     further alerts of that name within Options.Window (DefaultWindow) are
//     grouped into one summary message sent when the window ends;
//   - a channel-wide rate limit (Options.RateLimit messages a minute, by
//     default the platform's documented limit); messages over it are dropped;
//   - retries with exponential backoff (DefaultMaxAttempts, DefaultBackoff,
//     DefaultMaxBackoff), each send bounded by DefaultSendTimeout;
//   - the channel's own outcomes (sent, failed, retried, grouped, dropped)
//     reported to Options.Observer (package metrics counts them) and logged
//     with slog.
//
// A platform's error reply (DingTalk and WeCom answer HTTP 200 with
// errcode != 0, Feishu with code != 0) is a failed send and is retried.
package alertchannel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/argo-retry/argo/argotype"
)

// Defaults of Options.
const (
	// DefaultWindow is how long alerts of one task name are grouped after
	// the first one went out.
	DefaultWindow = time.Minute
	// DefaultMaxAttempts bounds the sends of one message (the first
	// included).
	DefaultMaxAttempts = 3
	// DefaultBackoff is the delay before the first retry; it doubles at each
	// retry up to DefaultMaxBackoff.
	DefaultBackoff = 500 * time.Millisecond
	// DefaultMaxBackoff caps the delay between two sends of one message.
	DefaultMaxBackoff = 5 * time.Second
	// DefaultSendTimeout bounds one send (one HTTP request, one SMTP session).
	DefaultSendTimeout = 5 * time.Second
	// MaxSummaryTaskIDs bounds the task ids a summary lists
	// (Message.TaskIDs); the rest are counted in Message.MoreTaskIDs.
	MaxSummaryTaskIDs = 20
)

// Outcomes reported to an Observer, one per message or alert.
const (
	OutcomeSent    = "sent"    // a message was delivered
	OutcomeFailed  = "failed"  // a message was given up: every attempt failed, or its template failed
	OutcomeRetried = "retried" // a send failed and is tried again
	OutcomeGrouped = "grouped" // an alert joined its name's window (it goes out in the summary)
	OutcomeDropped = "dropped" // a message was not sent: the rate limit was reached or the channel closed
)

// DefaultTemplate is the message body when Options.Template is empty. It
// renders a single alert, or a summary when .Summary is true.
const DefaultTemplate = `{{if .Summary -}}
argo: {{.Count}} more alert{{if ne .Count 1}}s{{end}} for task {{.TaskName}} within {{.Window}}
first: task {{.First.TaskID}}, attempt {{.First.ExecuteTimes}}: {{.First.LastError}}
last: task {{.Last.TaskID}}, attempt {{.Last.ExecuteTimes}}: {{.Last.LastError}}
tasks: {{range $i, $id := .TaskIDs}}{{if $i}}, {{end}}{{$id}}{{end}}{{if .MoreTaskIDs}} and {{.MoreTaskIDs}} more{{end}}
{{- else -}}
argo alert: task {{.TaskName}} (id {{.TaskID}}) failed attempt {{.ExecuteTimes}}{{if .MaxAttempts}} of {{.MaxAttempts}}{{end}}
error: {{.LastError}}
{{if .Exhausted}}no attempt left{{else if .WillRetry}}it will be retried{{else}}it will not be retried{{end}}
rule: {{.Expression}}
{{- end}}`

// DefaultSubject is the title (e-mail subject, DingTalk markdown title,
// Feishu post title) when Options.Subject is empty.
const DefaultSubject = `argo alert: {{.TaskName}}{{if .Summary}} ({{.Count}} more){{end}}`

// Options is the machinery every channel shares. Every zero field takes the
// default its comment states.
type Options struct {
	// Name labels the channel's metrics and logs. Default: the channel's
	// kind ("webhook", "dingtalk", "wecom", "feishu", "email").
	Name string
	// Template is the message body, a text/template over Message.
	// Default DefaultTemplate (DefaultMarkdownTemplate for markdown messages).
	Template string
	// Subject is the title, a text/template over Message. Default DefaultSubject.
	Subject string
	// Window groups the alerts of one task name: the first goes out at once,
	// the others within Window are sent as one summary when it ends.
	// Default DefaultWindow; negative: no grouping (every alert is a message).
	Window time.Duration
	// RateLimit bounds the messages a minute the channel sends, all names
	// together; messages over it are dropped (OutcomeDropped). Default: the
	// platform's documented limit (20 for DingTalk and WeCom, 100 for
	// Feishu), none for webhook and e-mail; negative: none.
	RateLimit int
	// MaxAttempts bounds the sends of one message. Default DefaultMaxAttempts.
	MaxAttempts int
	// Backoff is the delay before the first retry, doubled at each retry up
	// to DefaultMaxBackoff. Default DefaultBackoff.
	Backoff time.Duration
	// SendTimeout bounds one send. Default DefaultSendTimeout.
	SendTimeout time.Duration
	// HTTPClient sends the requests of the HTTP channels. Default: a client
	// of the channel's own (its requests are bounded by SendTimeout).
	HTTPClient *http.Client
	// Observer receives the channel's outcomes (package metrics' Collector
	// is one). Default none.
	Observer Observer
	// Logger receives the channel's logs. Default slog.Default().
	Logger *slog.Logger
}

// Observer receives a channel's outcomes (OutcomeSent …), labelled with the
// channel's Name. metrics.Collector implements it.
type Observer interface {
	AlertChannelEvent(channel, outcome string)
}

// Message is what the templates see: the alert (for a summary, the last
// alert of the window) and, for a summary, what the window grouped.
type Message struct {
	argotype.AlertEvent
	// Channel is the channel's Name.
	Channel string
	// Summary is true for the message sent when a window ends.
	Summary bool
	// Count is the alerts the message stands for: 1, or for a summary the
	// alerts grouped after the first one (which went out on its own).
	Count int
	// First and Last are the first and last alerts a summary groups (both
	// the alert itself otherwise).
	First, Last argotype.AlertEvent
	// TaskIDs are the ids of the tasks the alerts were about, in order, at
	// most MaxSummaryTaskIDs; MoreTaskIDs counts the rest.
	TaskIDs     []int64
	MoreTaskIDs int
	// Window is the grouping window (Options.Window).
	Window time.Duration
}

// ErrClosed is returned by Send after Close.
var ErrClosed = errors.New("alertchannel: channel closed")

// Channel delivers alerts to one destination. It is safe for concurrent
// use. Make one with NewWebhook, NewDingTalk, NewWeCom, NewFeishu or NewEmail.
type Channel struct {
	kind    string
	opts    Options
	body    *template.Template
	subject *template.Template
	deliver func(ctx context.Context, m rendered) error
	limit   *rateLimiter
	// afterFunc starts a window's timer (time.AfterFunc; tests end windows by hand).
	afterFunc func(d time.Duration, f func()) stopper

	mu       sync.Mutex
	groups   map[string]*group
	closed   bool
	inflight sync.WaitGroup // summaries being sent
}

// rendered is a message with its templates executed.
type rendered struct {
	Message
	Text, Subject string
}

// stopper is a window's timer.
type stopper interface{ Stop() bool }

// group is one task name's open window.
type group struct {
	timer   stopper
	count   int
	first   argotype.AlertEvent
	last    argotype.AlertEvent
	taskIDs []int64
	more    int
}

// newChannel resolves opts and checks the templates.
func newChannel(kind string, opts Options, defaultTemplate string, defaultRate int, deliver func(context.Context, rendered) error) (*Channel, error) {
	if opts.Name == "" {
		opts.Name = kind
	}
	if opts.Template == "" {
		opts.Template = defaultTemplate
	}
	if opts.Subject == "" {
		opts.Subject = DefaultSubject
	}
	if opts.Window == 0 {
		opts.Window = DefaultWindow
	}
	if opts.RateLimit == 0 {
		opts.RateLimit = defaultRate
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = DefaultSendTimeout
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Channel{kind: kind, opts: opts, deliver: deliver, groups: map[string]*group{}}
	c.afterFunc = func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }
	var err error
	if c.body, err = parseTemplate(kind, "Template", opts.Template); err != nil {
		return nil, err
	}
	if c.subject, err = parseTemplate(kind, "Subject", opts.Subject); err != nil {
		return nil, err
	}
	if opts.RateLimit > 0 {
		c.limit = &rateLimiter{perMinute: opts.RateLimit}
	}
	return c, nil
}

// parseTemplate parses text and executes it on a sample single alert and a
// sample summary, so a misspelt field fails here and not at the first alert.
func parseTemplate(kind, field, text string) (*template.Template, error) {
	t, err := template.New(field).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("alertchannel: %s %s: %w", kind, field, err)
	}
	ev := argotype.AlertEvent{AlertEnv: argotype.AlertEnv{TaskName: "sample", TaskID: 1, ExecuteTimes: 3, MaxAttempts: 4, LastError: "sample error", WillRetry: true}, Expression: "executeTimes >= 3", At: time.Unix(0, 0)}
	for _, m := range []Message{
		{AlertEvent: ev, Count: 1, First: ev, Last: ev, TaskIDs: []int64{1}, Window: DefaultWindow},
		{AlertEvent: ev, Summary: true, Count: 2, First: ev, Last: ev, TaskIDs: []int64{1, 2}, Window: DefaultWindow},
	} {
		if err := t.Execute(io.Discard, m); err != nil {
			return nil, fmt.Errorf("alertchannel: %s %s does not render an alert (its fields are those of alertchannel.Message): %w", kind, field, err)
		}
	}
	return t, nil
}

// Name returns the channel's name (Options.Name).
func (c *Channel) Name() string { return c.opts.Name }

// Send delivers ev: at once if it is the first alert of its task name in
// the window, else it joins the window's summary and Send returns nil. A
// message is retried with backoff until it is delivered, MaxAttempts sends
// failed or ctx ends; the error then says why. It implements
// runtime.AlertChannel.
func (c *Channel) Send(ctx context.Context, ev argotype.AlertEvent) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.observe(OutcomeDropped)
		return ErrClosed
	}
	if c.opts.Window > 0 {
		if g := c.groups[ev.TaskName]; g != nil {
			g.add(ev)
			c.mu.Unlock()
			c.observe(OutcomeGrouped)
			return nil
		}
		g := &group{}
		c.groups[ev.TaskName] = g
		name := ev.TaskName
		g.timer = c.afterFunc(c.opts.Window, func() { c.windowEnded(name, g) })
	}
	c.mu.Unlock()
	return c.dispatch(ctx, Message{AlertEvent: ev, Count: 1, First: ev, Last: ev, TaskIDs: []int64{ev.TaskID}})
}

func (g *group) add(ev argotype.AlertEvent) {
	if g.count == 0 {
		g.first = ev
	}
	g.count++
	g.last = ev
	if len(g.taskIDs) < MaxSummaryTaskIDs {
		g.taskIDs = append(g.taskIDs, ev.TaskID)
	} else {
		g.more++
	}
}

// windowEnded sends the summary of g, unless Close took it already.
func (c *Channel) windowEnded(name string, g *group) {
	c.mu.Lock()
	if c.groups[name] != g {
		c.mu.Unlock()
		return
	}
	delete(c.groups, name)
	c.inflight.Add(1)
	c.mu.Unlock()
	defer c.inflight.Done()
	c.sendSummary(context.Background(), g)
}

// sendSummary sends g's summary, if it grouped any alert, bounded by every
// attempt's timeout and backoff.
func (c *Channel) sendSummary(ctx context.Context, g *group) {
	if g.count == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(c.opts.MaxAttempts)*(c.opts.SendTimeout+DefaultMaxBackoff))
	defer cancel()
	m := Message{AlertEvent: g.last, Summary: true, Count: g.count, First: g.first, Last: g.last, TaskIDs: g.taskIDs, MoreTaskIDs: g.more}
	// dispatch logs and counts its failure.
	_ = c.dispatch(ctx, m)
}

// Close sends the summaries of the open windows now and waits for them
// (and for summaries being sent) until ctx ends. Send then returns
// ErrClosed. Close the channel after runtime.Runtime.Stop.
func (c *Channel) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	open := c.groups
	c.groups = map[string]*group{}
	for _, g := range open {
		g.timer.Stop()
		c.inflight.Add(1)
	}
	c.mu.Unlock()
	for _, g := range open {
		go func() {
			defer c.inflight.Done()
			c.sendSummary(ctx, g)
		}()
	}
	done := make(chan struct{})
	go func() { c.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("alertchannel %s: summaries still being sent at close: %w", c.opts.Name, context.Cause(ctx))
	}
}

// dispatch renders m and sends it, with retries.
func (c *Channel) dispatch(ctx context.Context, m Message) error {
	m.Channel = c.opts.Name
	m.Window = c.opts.Window
	log := c.opts.Logger.With("channel", c.opts.Name, "task", m.TaskName, "task_id", m.TaskID, "summary", m.Summary)
	if c.limit != nil && !c.limit.allow(time.Now()) {
		c.observe(OutcomeDropped)
		log.Error("argo: alert channel rate limit reached, message dropped", "rate_limit_per_minute", c.opts.RateLimit)
		return fmt.Errorf("alertchannel %s: rate limit of %d messages a minute reached: message about task %s dropped", c.opts.Name, c.opts.RateLimit, m.TaskName)
	}
	r := rendered{Message: m}
	var text, subject strings.Builder
	err := c.body.Execute(&text, m)
	if err == nil {
		err = c.subject.Execute(&subject, m)
	}
	if err != nil {
		c.observe(OutcomeFailed)
		log.Error("argo: alert channel template failed", "error", err)
		return fmt.Errorf("alertchannel %s: template: %w", c.opts.Name, err)
	}
	r.Text, r.Subject = text.String(), subject.String()
	backoff := c.opts.Backoff
	attempt := 1
	for ; ; attempt++ {
		sendCtx, cancel := context.WithTimeout(ctx, c.opts.SendTimeout)
		err = c.deliver(sendCtx, r)
		cancel()
		if err == nil {
			c.observe(OutcomeSent)
			return nil
		}
		if attempt >= c.opts.MaxAttempts || ctx.Err() != nil {
			break
		}
		c.observe(OutcomeRetried)
		log.Warn("argo: alert channel send failed, retrying", "attempt", attempt, "backoff", backoff, "error", err)
		wait := time.NewTimer(backoff)
		select {
		case <-wait.C:
		case <-ctx.Done():
			wait.Stop()
		}
		if ctx.Err() != nil {
			break
		}
		backoff = min(2*backoff, DefaultMaxBackoff)
	}
	c.observe(OutcomeFailed)
	log.Error("argo: alert channel gave up", "attempts", attempt, "error", err)
	return fmt.Errorf("alertchannel %s: gave up after %d attempts: %w", c.opts.Name, attempt, err)
}

func (c *Channel) observe(outcome string) {
	if c.opts.Observer != nil {
		c.opts.Observer.AlertChannelEvent(c.opts.Name, outcome)
	}
}

// rateLimiter allows perMinute events in any sliding minute.
type rateLimiter struct {
	perMinute int
	mu        sync.Mutex
	sent      []time.Time // within the last minute, oldest first
}

func (l *rateLimiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	cut := 0
	for cut < len(l.sent) && now.Sub(l.sent[cut]) >= time.Minute {
		cut++
	}
	l.sent = l.sent[cut:]
	if len(l.sent) >= l.perMinute {
		return false
	}
	l.sent = append(l.sent, now)
	return true
}

// maxReply bounds the reply body read from an HTTP endpoint.
const maxReply = 64 << 10

// postJSON posts body as JSON to url and returns the reply's body; a status
// other than 2xx is an error quoting the start of the reply.
func postJSON(ctx context.Context, client *http.Client, url string, body any, header http.Header) ([]byte, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := client.Do(req)
	if err != nil {
		// Not the *url.Error itself: the URL carries the robot's token.
		var ue *neturl.Error
		if errors.As(err, &ue) {
			return nil, fmt.Errorf("%s: %w", ue.Op, ue.Err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return nil, fmt.Errorf("reading the reply: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return reply, fmt.Errorf("HTTP %s: %s", resp.Status, truncate(string(reply), 200))
	}
	return reply, nil
}

// truncate cuts s to at most n bytes at a rune boundary, ending with "…"
// when it cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// checkURL reports an empty or non-HTTP webhook URL.
func checkURL(kind, raw string) error {
	if !strings.HasPrefix(raw, "https://") && !strings.HasPrefix(raw, "http://") {
		// The URL is not quoted: it carries the robot's token.
		return fmt.Errorf("alertchannel: %s WebhookURL: want the http(s) webhook URL the platform gives", kind)
	}
	return nil
}
