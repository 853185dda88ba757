// Package console is argo's operator console: an http.Handler that shows
// what argo holds in its tables (counts by task name, tenant and state,
// outcomes and retry lateness over time, the instances and what they can
// run, flow-control breakers, every task with its arguments, policy,
// attempts, dependencies and operator trail) and, when writes are allowed,
// repairs it (requeue, discard or its two-person review, run now, force to
// the dead letter), one task or many by filter, each change recorded with
// the operator who made it.
//
// A service mounts it on its own mux, under its own middleware:
//
//	h, err := console.New(console.Options{Inspector: rt.Inspector()})
//	mux.Handle("/argo/", http.StripPrefix("/argo", h))
//
// Every link it writes is relative, so it works under any prefix. Pages are
// rendered on the server with html/template (every database value is
// escaped); its CSS and JavaScript, the chart library included, are embedded
// in the binary, and each response carries a Content-Security-Policy without
// inline script. `argoctl serve` runs it standalone. docs/console.md tells
// what it shows and its security model.
package console
