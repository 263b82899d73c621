CURRENCY = "EUR"
DB_PASSWORD = "billing-dev-2024"
