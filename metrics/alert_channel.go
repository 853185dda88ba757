package metrics

import "github.com/argo-retry/argo/alertchannel"

// alertChannelHelp describes argo_alert_channel_messages_total.
const alertChannelHelp = "What the alert channels (package alertchannel) did, by channel and outcome: sent and failed count messages (failed: every attempt failed), retried counts sends tried again, grouped counts alerts folded into a window's summary, dropped counts messages over the rate limit or sent after Close."

var _ alertchannel.Observer = (*Collector)(nil)

// AlertChannelEvent implements alertchannel.Observer: set the Collector as
// the Observer of each channel's alertchannel.Options.
func (c *Collector) AlertChannelEvent(channel, outcome string) {
	c.channels.WithLabelValues(channel, outcome).Inc()
}
