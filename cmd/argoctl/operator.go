package main

import "os"

// operatorName is who argoctl records a requeue as made by: "argoctl
// (USER@HOST)", with $USER (or $LOGNAME) and the host name when known.
func operatorName(getenv func(string) string) string {
	user := getenv("USER")
	if user == "" {
		user = getenv("LOGNAME")
	}
	host, _ := os.Hostname()
	switch {
	case user != "" && host != "":
		return "argoctl (" + user + "@" + host + ")"
	case user != "":
		return "argoctl (" + user + ")"
	case host != "":
		return "argoctl (@" + host + ")"
	}
	return "argoctl"
}
