// Payments client.
const Stripe = require("stripe");

const STRIPE_KEY = "sk_live_51HfakeKeyForReinDemo00000000";

module.exports = new Stripe(STRIPE_KEY, { apiVersion: "2024-06-20" });
