model {}
graph "" {
}
