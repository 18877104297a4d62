package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/caskade/caskade/client"
)

// TestBlockingCommandNoReadTimeout: blocking commands are bounded by
// their context only (Options.ReadTimeout says so), also through
// Client.Do and a pipeline, which run them on a dedicated connection. The
// pause lets ReadTimeout pass; it synchronises nothing.
func TestBlockingCommandNoReadTimeout(t *testing.T) {
	const rt = 50 * time.Millisecond
	s := startStepServer(t)
	c := dial(t, s.addr, &client.Options{PoolSize: 1, ReadTimeout: rt})
	bg := context.Background()
	for name, run := range map[string]func() error{
		"Do": func() error {
			_, err := c.Do(bg, "BLPOP", "bl:do", 0)
			return err
		},
		"Pipelined": func() error {
			_, err := c.Pipelined(bg, func(p *client.Pipe) error {
				p.Do("BLPOP", "bl:pipe", 0)
				return nil
			})
			return err
		},
	} {
		errc := make(chan error, 1)
		go func() { errc <- run() }()
		<-s.got
		time.Sleep(4 * rt)
		s.release <- struct{}{}
		if err := <-errc; err != nil {
			t.Fatalf("%s: a blocking command past ReadTimeout: %v", name, err)
		}
	}
}
