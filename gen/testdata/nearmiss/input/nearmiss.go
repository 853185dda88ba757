// Package nearmiss has comments that look like //argo:retry directives but
// are not: argogen warns about each and generates only Real.
package nearmiss

import "context"

// Real is the one task.
//
//argo:retry retries=2
func Real(ctx context.Context) error { return nil }

// Spaced has a space after //.
//
// argo:retry retries=3
func Spaced(ctx context.Context) error { return nil }

// TabSpaced has a tab after //.
//
//	argo:retry
func TabSpaced(ctx context.Context) error { return nil }

// Capital has a capital letter.
//
// (gofmt moves a capital or spaced directive in a doc comment after a
// space; inside a body it stays as written.)
func Capital(ctx context.Context) error {
	//argo:Retry
	return nil
}

// Shouting is all upper case.
//
// (gofmt moves a capital or spaced directive in a doc comment after a
// space; inside a body it stays as written.)
func Shouting(ctx context.Context) error {
	//ARGO:RETRY
	return nil
}

// Gofmted is //argo:Retry after gofmt.
//
// argo:Retry
func Gofmted(ctx context.Context) error { return nil }

// Misspelled has a tool name misspelling.
//
//agro:retry
func Misspelled(ctx context.Context) error { return nil }

// Colon has a space after the colon.
//
// (gofmt moves a capital or spaced directive in a doc comment after a
// space; inside a body it stays as written.)
func Colon(ctx context.Context) error {
	//argo: retry
	return nil
}

// Block is a block comment.
/* argo:retry */
func Block(ctx context.Context) error { return nil }

// Prose mentions argo:retry in a sentence, and the go:generate directive
// below is someone else's: no warnings.
//
//go:generate echo argo
func Prose(ctx context.Context) error { return nil }
