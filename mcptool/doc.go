// Package mcptool registers wapace's WhatsApp tools on a Model Context
// Protocol server built with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): send_whatsapp_message, which
// decides inside the tool whether a message goes now, waits in the durable
// outbox, or is refused, and get_message_status.
package mcptool
