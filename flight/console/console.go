// Package console is the Coordinator's web console (/ui): static pages,
// embedded in the binary, whose script reads the Coordinator's JSON API
// (docs/console.md). No CDN, no build step: it works offline.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Files are the console's pages and assets (index.html, login.html,
// app.js, style.css).
func Files() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embed pattern names the directory
	}
	return sub
}

// Handler serves the console under prefix (e.g. "/ui/"), with the
// headers a console wants: no caching of the pages, no framing, no
// scripts but its own.
func Handler(prefix string) http.Handler {
	files := http.StripPrefix(prefix, http.FileServer(http.FS(Files())))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.Set("Referrer-Policy", "no-referrer")
		files.ServeHTTP(w, r)
	})
}
