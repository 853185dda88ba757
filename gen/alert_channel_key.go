package gen

import (
	"strings"

	"github.com/dave/jennifer/jen"
)

// The alert-channel=NAME[,NAME…] key: the task's alerts also go to these
// entries of runtime.Config.AlertChannels (TaskDef.AlertChannels). It needs
// alert=, like alert-action=; Register refuses a name that is not configured.

// setAlertChannels parses alert-channel=NAME[,NAME…].
func setAlertChannels(s *spec, v string) string {
	var names []string
	for _, name := range strings.Split(v, ",") {
		switch {
		case name == "":
			return "want one or more channel names separated by commas, like ops or ops,mail"
		case strings.IndexFunc(name, func(r rune) bool { return !isChannelNameRune(r) }) >= 0:
			return "channel name " + quote(name) + " may hold only letters, digits, '_', '-' and '.'"
		}
		for _, seen := range names {
			if seen == name {
				return "channel " + quote(name) + " is named twice"
			}
		}
		names = append(names, name)
	}
	s.alertChannels = names
	return ""
}

func isChannelNameRune(r rune) bool {
	return r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

func quote(s string) string { return `"` + s + `"` }

// crossCheckAlertChannel reports alert-channel= without alert=.
func (s *spec) crossCheckAlertChannel(e *errs) {
	if p, ok := s.pos["alert-channel"]; ok && s.alert == "" {
		e.at(p, "alert-channel: requires alert=\"EXPR\"")
	}
}

// alertChannelsField is the TaskDef field AlertChannels: []string{…}, or
// nil when the directive names none.
func alertChannelsField(s *spec) jen.Code {
	if len(s.alertChannels) == 0 || s.alert == "" {
		return nil
	}
	names := make([]jen.Code, len(s.alertChannels))
	for i, n := range s.alertChannels {
		names[i] = jen.Lit(n)
	}
	return kv("AlertChannels", jen.Index().String().Values(names...))
}
