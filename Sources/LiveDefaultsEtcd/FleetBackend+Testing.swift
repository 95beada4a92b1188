import LiveDefaults

/// What the tests read of a fleet backend's offline cache.
extension FleetBackend {
    /// How many times the cache file was written.
    var cacheWrites: Int { cache.writes }

    /// What the cache file holds now, nil when there is none.
    func cacheFileContents() throws(DefaultsError) -> FleetCache? { try cache.contents() }

    /// Writes a waiting cache now and waits until it is written.
    func cacheSaved() async { await cache.saved() }
}
