package main

import (
	"fmt"
	"os"
)

func cmdBench(args []string) int {
	fmt.Fprintln(os.Stderr, "clink bench: not built yet")
	return 2
}
