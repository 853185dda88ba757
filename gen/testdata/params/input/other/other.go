// Package other is imported by the params test case.
package other

// Thing is an exported struct of another package.
type Thing struct {
	Name string
	Size int
}
