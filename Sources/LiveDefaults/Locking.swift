import LiveDefaultsLocking

/// The lock the library guards its state with, from LiveDefaultsLocking (shared with the watcher); named
/// here so that the library's files use it without importing that module each.
package typealias Locked<Value> = LiveDefaultsLocking.Locked<Value>
