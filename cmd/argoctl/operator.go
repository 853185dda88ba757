package main

import "os/user"

// operatorName is who argoctl records changes as made by when -operator is
// not given: the OS user ($USER, else $LOGNAME, else the account running
// argoctl); "" when none is known. A reviewed discard compares these names:
// the same person on two hosts is one operator.
func operatorName(getenv func(string) string) string {
	if u := getenv("USER"); u != "" {
		return u
	}
	if u := getenv("LOGNAME"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// anonymousOperator is who a requeue, discard, force-fail or run is
// recorded as made by when no operator is known. A discard request and its
// decision refuse to run without a name.
const anonymousOperator = "argoctl"
