package runtime

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// AlertChannel delivers alerts to where a team reads them. Package
// alertchannel has the built-in ones (webhook, DingTalk, WeCom,
// Feishu/Lark, e-mail); any type with this method works. Name channels in
// Config.AlertChannels; a directive's alert-channel=NAME (TaskDef.AlertChannels)
// sends its alerts to them. Send runs on the alert pool, off the worker
// path, bounded by Config.AlertTimeout.
type AlertChannel interface {
	Send(ctx context.Context, ev AlertEvent) error
}

// checkAlertChannels reports a Config.AlertChannels entry without a name
// or a channel.
func (c Config) checkAlertChannels() error {
	for name, ch := range c.AlertChannels {
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("argo: Config.AlertChannels has an entry with an empty name")
		}
		if ch == nil {
			return fmt.Errorf("argo: Config.AlertChannels[%q] is nil", name)
		}
	}
	return nil
}

// checkTaskChannels reports the channels d names that are not configured,
// listing those that are.
func (rt *Runtime) checkTaskChannels(d *TaskDef) error {
	var missing []string
	for _, name := range d.AlertChannels {
		if _, ok := rt.cfg.AlertChannels[name]; !ok {
			missing = append(missing, strconv.Quote(name))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	configured := make([]string, 0, len(rt.cfg.AlertChannels))
	for n := range rt.cfg.AlertChannels {
		configured = append(configured, n)
	}
	slices.Sort(configured)
	have := "none is configured"
	if len(configured) > 0 {
		have = "configured: " + strings.Join(configured, ", ")
	}
	what := "alert channel " + missing[0] + " is"
	if len(missing) > 1 {
		what = "alert channels " + strings.Join(missing, ", ") + " are"
	}
	return fmt.Errorf("argo: task %s: %s not in runtime.Config.AlertChannels (%s)", d.Name, what, have)
}

// alertJobs are the jobs an alert of def queues: its action, then one per
// channel.
func (a *alerter) alertJobs(def *TaskDef, ev AlertEvent, span func(context.Context) (context.Context, func(error))) []alertJob {
	var jobs []alertJob
	if def.AlertAction != nil {
		jobs = append(jobs, alertJob{name: def.Name, action: def.AlertAction, ev: ev, span: span, label: def.AlertActionName})
	}
	for _, name := range def.AlertChannels {
		ch := a.channels[name]
		if ch == nil {
			// Register refuses such a task; a TaskDef changed after it is logged.
			a.log.Error("argo: alert channel not configured, alert not sent", "task", def.Name, "task_id", ev.TaskID, "channel", name)
			continue
		}
		jobs = append(jobs, alertJob{name: def.Name, action: ch.Send, ev: ev, span: span, label: "channel " + name})
	}
	return jobs
}
