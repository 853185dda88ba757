// Package integration holds the warehouse's calls to systems it does not
// trust, each made durable by an //argo:retry directive; argo_gen.go is
// generated from them by argogen.
package integration

//go:generate go run github.com/argo-retry/argo/cmd/argogen
