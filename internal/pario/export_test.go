package pario

import "context"

// WithFailHook returns a context that makes a pario call run f right after
// it has recorded its first error and cancelled its workers.
func WithFailHook(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, failHookKey{}, f)
}
