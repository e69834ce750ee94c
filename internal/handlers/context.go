package handlers

import (
	"context"
	"net/http"
	"time"
)

func contextWithTimeout(req *http.Request, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(req.Context(), d)
}
