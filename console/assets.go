package console

import (
	"embed"
	"io/fs"
	"net/http"
)

// assetFiles are the console's CSS and JavaScript, and the vendored chart
// library (assets/vendor/VERSIONS names its version and checksums).
//
//go:embed assets
var assetFiles embed.FS

// assetHandler serves GET ./assets/….
func assetHandler() http.Handler {
	sub, err := fs.Sub(assetFiles, "assets")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/assets/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
