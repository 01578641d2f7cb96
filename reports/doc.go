// Package reports is runwatch's pure logic and its renderers: progress and throughput, the ETA (through
// reports/estimate) and how it moved, storage and protected-write answers, capacity plans, engine signals,
// the finish summary, checklist verdicts, and every answer as a Message rendered as plain text or Block Kit.
// It reads nothing and keeps no clock: probes' readings and the time come in as arguments.
package reports
