module runwatch/scripts/crossings

go 1.26.0

require golang.org/x/tools v0.53.0

require (
	golang.org/x/mod v0.43.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
)
