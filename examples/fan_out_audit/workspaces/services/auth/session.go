package auth

const SessionMinutes = 30
