/// This build's version: `baton --version`, and the `User-Agent` of Baton's HTTP requests.
public enum BatonVersion {
    public static let current = "0.1.0"
}
