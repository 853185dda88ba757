// Package alertchannel_errors covers misuse of alert-channel=.
package alertchannel_errors

import "context"

// NoAlert names a channel without alert=.
//
//argo:retry alert-channel=ops
func NoAlert(ctx context.Context) error { return nil }

// EmptyName has an empty name in the list.
//
//argo:retry alert="exhausted" alert-channel=ops,,mail
func EmptyName(ctx context.Context) error { return nil }

// BadName has a name with a space-free but odd character.
//
//argo:retry alert="exhausted" alert-channel=ops/pager
func BadName(ctx context.Context) error { return nil }

// Twice names a channel twice.
//
//argo:retry alert="exhausted" alert-channel=ops,ops
func Twice(ctx context.Context) error { return nil }

// Typo misspells the key.
//
//argo:retry alert="exhausted" alert-chanel=ops
func Typo(ctx context.Context) error { return nil }
