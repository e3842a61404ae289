"""The AG-UI server and its wire protocols: AG-UI over HTTP (``agui``), the AI SDK UI message
stream (``ui_message_stream``), threads in a store (``threads``), who is asking (``auth``), what one
principal may ask (``limits``), and the offline demo app (``demo``)."""
