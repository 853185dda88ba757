package main

// The walk-through of the README, run as a test: the receipt is sent at the
// third attempt.
func Example_main() {
	main()
	// Output:
	// receipt for SO-1001 (42.50) sent
	// attempts: 3, succeeded tasks: 1
}
