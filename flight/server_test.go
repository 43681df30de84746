package flight

import (
	"context"
	"sync"
	"testing"
)

// TestCallAfterClose: a client closed while other goroutines still call
// through it (the Coordinator closes a lost Worker's client while its
// trigger and complete calls run) fails those calls instead of racing or
// panicking. Run it with -race.
func TestCallAfterClose(t *testing.T) {
	srv, err := NewServer("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	srv.Handle("echo", func(_ context.Context, body []byte) ([]byte, error) { return body, nil })
	go srv.Serve()
	defer srv.Shutdown()
	cl, err := Dial(srv.Addr(), "")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := Call(context.Background(), cl, "echo", []byte("hi")); err != nil || string(out) != "hi" {
		t.Fatalf("call: %q %v", out, err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				Call(context.Background(), cl, "echo", []byte("hi"))
			}
		}()
	}
	cl.Close()
	wg.Wait()
	if _, err := Call(context.Background(), cl, "echo", []byte("hi")); err == nil {
		t.Fatal("a call on a closed client succeeded")
	}
}
