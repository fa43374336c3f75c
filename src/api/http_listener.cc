#include "api/http_listener.h"

#include <spdlog/spdlog.h>
#include <zlib.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/strings.h"

namespace toposched::api::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = net::ip::tcp;

bool CaseLess::operator()(const std::string& a, const std::string& b) const {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const int x = std::tolower(static_cast<unsigned char>(a[i]));
    const int y = std::tolower(static_cast<unsigned char>(b[i]));
    if (x != y) return x < y;
  }
  return a.size() < b.size();
}

std::string Request::get_header_value(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

std::string Request::get_param_value(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

void Response::set_content(std::string content, const std::string& content_type) {
  body = std::move(content);
  set_header("Content-Type", content_type);
}

void Response::set_header(const std::string& name, const std::string& value) {
  headers.erase(name);
  headers.emplace(name, value);
}

std::string Response::get_header_value(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

std::string ErrorBody(const std::string& code, const std::string& message) {
  using json = nlohmann::ordered_json;
  return json{{"code", code}, {"message", message}}.dump(-1, ' ', false,
                                                         json::error_handler_t::replace);
}

Status ListenerOptions::Validate() const {
  if (host.empty()) return InvalidArgumentError("listen host is empty");
  if (port < 0 || port > 65535) return InvalidArgumentError("port out of range");
  if (max_body_bytes < 1024) return InvalidArgumentError("max_body_bytes must be >= 1024");
  if (max_header_bytes < 1024) return InvalidArgumentError("max_header_bytes must be >= 1024");
  for (int ms : {read_timeout_ms, write_timeout_ms, keep_alive_timeout_ms}) {
    if (ms < 1 || ms > 3600 * 1000) return InvalidArgumentError("timeouts must be in [1 ms, 1 h]");
  }
  if (keep_alive_max_requests < 1) return InvalidArgumentError("keep_alive_max_requests < 1");
  if (max_connections < 1 || max_connections > 65536) {
    return InvalidArgumentError("max_connections must be in [1, 65536]");
  }
  if (workers < 1 || workers > 1024) return InvalidArgumentError("threads must be in [1, 1024]");
  return OkStatus();
}

namespace {

using Ms = std::chrono::milliseconds;
// Connections beyond max_connections that are still read (for 1 s) so that they get a 503, or
// their health probe an answer; beyond these, a connection is closed as soon as it is accepted.
constexpr int kRefusalSlots = 64;
// How long, and how much, a refused request's remaining bytes are read and dropped before its
// connection is closed (closing with unread bytes resets it, and the client may lose the answer).
constexpr int kLingerMs = 1000;
constexpr size_t kLingerBodies = 16;  // × max_body_bytes
// Bytes a connection's read buffer may hold beyond the largest head.
constexpr size_t kReadAhead = 64 * 1024;

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

void SplitTarget(std::string_view target, Request* req) {
  const size_t q = target.find('?');
  req->path = PercentDecode(target.substr(0, q), false);
  if (q == std::string_view::npos) return;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view item = query.substr(0, amp);
    if (!item.empty() && item[0] != '=') {  // "=x" has no name: skipped
      const size_t eq = item.find('=');
      req->params.emplace(
          PercentDecode(item.substr(0, eq), true),
          eq == std::string_view::npos ? std::string() : PercentDecode(item.substr(eq + 1), true));
    }
    if (amp == std::string_view::npos) break;
    query = query.substr(amp + 1);
  }
}

// Whether an Accept-Encoding value accepts gzip (a "gzip" coding whose q is not 0).
bool AcceptsGzip(const std::string& value) {
  const std::string v = ToLower(value);
  size_t start = 0;
  while (start <= v.size()) {
    size_t end = v.find(',', start);
    if (end == std::string::npos) end = v.size();
    const std::string_view item = std::string_view(v).substr(start, end - start);
    const size_t semi = item.find(';');
    const std::string_view coding = Trim(item.substr(0, semi));
    if (coding == "gzip" || coding == "x-gzip") {
      if (semi == std::string_view::npos) return true;
      const std::string_view param = Trim(item.substr(semi + 1));
      if (param.rfind("q=", 0) != 0) return true;
      return std::strtod(std::string(param.substr(2)).c_str(), nullptr) > 0;
    }
    start = end + 1;
  }
  return false;
}

bool Compressible(const std::string& type) {
  return type.rfind("text/", 0) == 0 || type.rfind("application/json", 0) == 0 ||
         type.rfind("application/javascript", 0) == 0 || type.rfind("image/svg+xml", 0) == 0;
}

std::optional<std::string> Gzip(const std::string& in) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    return std::nullopt;
  }
  std::string out(deflateBound(&zs, static_cast<uLong>(in.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  const size_t n = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return std::nullopt;
  out.resize(n);
  return out;
}

// The body gzip-compressed, when it is text or JSON of 1 KiB or more and not encoded already.
void CompressBody(Response& r) {
  if (r.body.size() < 1024 || !Compressible(r.get_header_value("Content-Type")) ||
      !r.get_header_value("Content-Encoding").empty()) {
    return;
  }
  if (std::optional<std::string> z = Gzip(r.body)) {
    r.body = std::move(*z);
    r.set_header("Content-Encoding", "gzip");
    r.set_header("Vary", "Accept-Encoding");
  }
}

bool IsHttpError(const beast::error_code& ec) {
  return ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category();
}

}  // namespace

struct Listener::Impl {
  Impl(ListenerOptions opts, Handler h) : o(std::move(opts)), handler(std::move(h)) {}

  std::atomic<int> open{0};
  std::atomic<uint64_t> accepted{0}, refused_over_limit{0}, timed_out{0}, too_large{0};
  ListenerOptions o;
  Handler handler;
  int port = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false;  // Stop() has begun
  bool done = false;     // Stop() has finished

  // Declared before what uses it, so destroyed after: sessions still queued anywhere are
  // destroyed with the io_context, last.
  net::io_context ioc{2};
  tcp::acceptor acceptor{ioc};
  net::steady_timer retry{ioc};
  std::optional<ssl::context> tls;
  std::unique_ptr<net::thread_pool> workers;
  std::unique_ptr<net::thread_pool> fast;  // GET /healthz: never queued behind other requests
  std::vector<std::thread> io_threads;

  void Accept();
};

namespace {

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  // The read buffer is bounded too: the head is held to max_header_bytes by the parser, but a
  // chunk's extensions and a chunked body's trailer are not, and would otherwise grow it.
  Session(Listener::Impl* l, Stream stream, bool over_limit)
      : l_(l),
        stream_(std::move(stream)),
        buffer_(l->o.max_header_bytes + kReadAhead),
        over_limit_(over_limit) {
    ++l_->open;
  }
  ~Session() { --l_->open; }

  void Start() {
    net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if constexpr (kTls) {
        self->Lowest().expires_after(Ms(self->over_limit_ ? 1000 : self->l_->o.read_timeout_ms));
        self->stream_.async_handshake(ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) return self->Close();  // no or a wrong certificate
          self->ReadHead();
        });
      } else {
        self->ReadHead();
      }
    });
  }

 private:
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void ReadHead() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(l_->o.max_header_bytes));
    parser_->body_limit(l_->o.max_body_bytes);
    const int ms = over_limit_ ? 1000
                   : first_    ? l_->o.read_timeout_ms
                               : l_->o.keep_alive_timeout_ms;
    Lowest().expires_after(Ms(ms));
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnHead(ec); });
  }

  void OnHead(beast::error_code ec) {
    const ListenerOptions& o = l_->o;
    if (ec == beast::error::timeout) {
      if (parser_->got_some()) ++l_->timed_out;  // else an idle keep-alive connection ended
      return Close();
    }
    if (ec == bhttp::error::header_limit) {
      ++l_->too_large;
      return Refuse(431, "header_too_large",
                    "request head over the server's limit of " +
                        std::to_string(o.max_header_bytes) + " bytes");
    }
    if (ec == bhttp::error::body_limit) {  // a Content-Length over the limit
      ++l_->too_large;
      return RefuseTooLarge();
    }
    if (ec && IsHttpError(ec) && ec != bhttp::error::end_of_stream) {
      return Refuse(400, "bad_request", "malformed HTTP request: " + ec.message());
    }
    if (ec) return Close();
    const auto& m = parser_->get();
    if (over_limit_) {
      if (m.method() == bhttp::verb::get && m.target() == "/healthz") return Dispatch();
      ++l_->refused_over_limit;
      return Refuse(503, "unavailable",
                    "too many open connections: the server's limit is " +
                        std::to_string(o.max_connections) +
                        " (serve --max-connections); retry later",
                    true);
    }
    if (parser_->content_length() && *parser_->content_length() > o.max_body_bytes) {
      ++l_->too_large;
      return RefuseTooLarge();
    }
    const auto expect = m.find(bhttp::field::expect);
    if (expect != m.end() && beast::iequals(expect->value(), "100-continue")) {
      auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_,
                                                                       m.version());
      Lowest().expires_after(Ms(o.write_timeout_ms));
      return bhttp::async_write(
          stream_, *cont, [self = this->shared_from_this(), cont](beast::error_code e, size_t) {
            if (e) return self->Close();
            self->ReadBody();
          });
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) return Dispatch();
    Lowest().expires_after(Ms(l_->o.read_timeout_ms));
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    if (ec == bhttp::error::body_limit) {
      ++l_->too_large;
      return RefuseTooLarge();
    }
    if (ec == beast::error::timeout) {
      ++l_->timed_out;
      return Close();
    }
    if (ec && IsHttpError(ec) && ec != bhttp::error::end_of_stream) {
      return Refuse(400, "bad_request", "malformed HTTP request body: " + ec.message());
    }
    if (ec) return Close();
    Dispatch();
  }

  void RefuseTooLarge() {
    Refuse(413, "payload_too_large",
           "request body over the server's limit of " + std::to_string(l_->o.max_body_bytes) +
               " bytes (serve --max-body-bytes)");
  }

  // Hands the complete request to a worker; its answer is written back on this connection.
  void Dispatch() {
    Lowest().expires_never();  // the handler's time is not the client's
    bhttp::request<bhttp::string_body> m = parser_->release();
    auto req = std::make_shared<Request>();
    req->method = std::string(m.method_string().data(), m.method_string().size());
    SplitTarget(std::string_view(m.target().data(), m.target().size()), req.get());
    for (const auto& f : m) {
      req->headers.emplace(std::string(f.name_string().data(), f.name_string().size()),
                           std::string(f.value().data(), f.value().size()));
    }
    req->body = std::move(m.body());
    beast::error_code ec;
    const tcp::endpoint peer = Lowest().socket().remote_endpoint(ec);
    if (!ec) {
      req->remote_addr = peer.address().to_string();
      req->remote_port = peer.port();
    }
    version_ = m.version();
    keep_alive_ = m.keep_alive() && !over_limit_;
    head_ = m.method() == bhttp::verb::head;
    gzip_ = AcceptsGzip(req->get_header_value("Accept-Encoding"));
    const bool health = m.method() == bhttp::verb::get && req->path == "/healthz";
    net::thread_pool& pool = health ? *l_->fast : *l_->workers;
    const bool gzip = gzip_ && !head_;
    net::post(pool, [self = this->shared_from_this(), req, gzip] {
      auto res = std::make_shared<Response>();
      try {
        self->l_->handler(*req, *res);
      } catch (const std::exception& e) {
        *res = Response{};
        res->status = 500;
        res->set_content(ErrorBody("internal", e.what()), "application/json");
      } catch (...) {
        *res = Response{};
        res->status = 500;
        res->set_content(ErrorBody("internal", "unknown exception"), "application/json");
      }
      // Compressed here, on the worker, not on the threads that serve every connection's I/O.
      if (gzip) CompressBody(*res);
      net::post(self->stream_.get_executor(), [self, res] { self->Write(std::move(*res), false); });
    });
  }

  void Refuse(int status, const std::string& code, const std::string& message,
              bool retry_after = false) {
    if (l_->o.log_refusals) {
      beast::error_code ec;
      const tcp::endpoint peer = Lowest().socket().remote_endpoint(ec);
      spdlog::info("msg=refused listener={} status={} code={} remote={}:{}", l_->o.name, status,
                   code, ec ? std::string("?") : peer.address().to_string(), ec ? 0 : peer.port());
    }
    Response r;
    r.status = status;
    r.set_content(ErrorBody(code, message), "application/json");
    if (retry_after) r.set_header("Retry-After", "1");
    head_ = gzip_ = keep_alive_ = false;
    if (version_ == 0) version_ = 11;
    Write(std::move(r), true);
  }

  void Write(Response r, bool refused) {
    auto msg = std::make_shared<bhttp::response<bhttp::string_body>>();
    msg->version(version_);
    msg->result(static_cast<unsigned>(r.status));
    for (const auto& [k, v] : r.headers) msg->insert(k, v);
    ++served_;
    const bool keep = !refused && keep_alive_ && served_ < l_->o.keep_alive_max_requests;
    msg->keep_alive(keep);
    const size_t n = r.body.size();
    if (!head_) msg->body() = std::move(r.body);
    if (r.status >= 200 && r.status != 204 && r.status != 304) msg->content_length(n);
    Lowest().expires_after(Ms(l_->o.write_timeout_ms));
    bhttp::async_write(
        stream_, *msg,
        [self = this->shared_from_this(), msg, keep, refused](beast::error_code ec, size_t) {
          if (ec) return self->Close();
          if (refused) return self->Linger();
          if (!keep) return self->Close();
          self->first_ = false;
          self->ReadHead();
        });
  }

  // After a refusal: stop sending, read and drop what the client still sends for a while, close.
  void Linger() {
    if constexpr (kTls) {
      Close();
    } else {
      beast::error_code ec;
      Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
      Lowest().expires_after(Ms(kLingerMs));
      drain_.resize(16 * 1024);
      DrainSome();
    }
  }

  void DrainSome() {
    Lowest().async_read_some(
        net::buffer(drain_), [self = this->shared_from_this()](beast::error_code ec, size_t n) {
          self->drained_ += n;
          if (ec || self->drained_ > kLingerBodies * self->l_->o.max_body_bytes)
            return self->Close();
          self->DrainSome();
        });
  }

  void Close() {
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    Lowest().close();
  }

  Listener::Impl* l_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bool over_limit_;
  bool first_ = true;
  bool keep_alive_ = false, head_ = false, gzip_ = false;
  unsigned version_ = 0;
  int served_ = 0;
  std::vector<char> drain_;
  size_t drained_ = 0;
};

}  // namespace

void Listener::Impl::Accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket sock) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    if (ec) {
      // Out of descriptors (EMFILE) or a connection reset before it was accepted: try again
      // shortly rather than spin.
      spdlog::warn("msg=\"accept failed\" listener={} error=\"{}\"", o.name, ec.message());
      retry.expires_after(Ms(100));
      retry.async_wait([this](beast::error_code e) {
        if (!e) Accept();
      });
      return;
    }
    ++accepted;
    const int now = open.load();
    if (now >= o.max_connections + kRefusalSlots) {
      ++refused_over_limit;
      beast::error_code ignored;
      sock.close(ignored);
    } else {
      beast::error_code ignored;
      sock.set_option(tcp::no_delay(true), ignored);
      const bool over = now >= o.max_connections;
      if (tls) {
        using S = beast::ssl_stream<beast::tcp_stream>;
        std::make_shared<Session<S>>(this, S(beast::tcp_stream(std::move(sock)), *tls), over)
            ->Start();
      } else {
        std::make_shared<Session<beast::tcp_stream>>(this, beast::tcp_stream(std::move(sock)), over)
            ->Start();
      }
    }
    Accept();
  });
}

Listener::Listener(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Listener::~Listener() { Stop(); }

int Listener::port() const { return impl_->port; }

StatusOr<std::unique_ptr<Listener>> Listener::Start(ListenerOptions options, Handler handler) {
  RETURN_IF_ERROR(options.Validate());
  auto impl = std::make_unique<Impl>(std::move(options), std::move(handler));
  const ListenerOptions& o = impl->o;
  if (!o.cert_file.empty()) {
    try {
      impl->tls.emplace(ssl::context::tls_server);
      impl->tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                             ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                             ssl::context::no_tlsv1_1);
      impl->tls->use_certificate_chain_file(o.cert_file);
      impl->tls->use_private_key_file(o.key_file, ssl::context::pem);
      impl->tls->load_verify_file(o.client_ca_file);
      impl->tls->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
    } catch (const boost::system::system_error& e) {
      return InvalidArgumentError("the certificate " + o.cert_file + ", key " + o.key_file +
                                  " or client CA " + o.client_ca_file +
                                  " could not be loaded (PEM files expected): " + e.what());
    }
  }
  const std::string where = o.host + ":" + std::to_string(o.port);
  beast::error_code ec;
  tcp::resolver resolver(impl->ioc);
  const auto found = resolver.resolve(o.host, std::to_string(o.port),
                                      tcp::resolver::numeric_service | tcp::resolver::passive, ec);
  if (ec || found.empty()) {
    return Status(StatusCode::kUnavailable, "cannot listen on " + where + ": " + ec.message());
  }
  const tcp::endpoint ep = found.begin()->endpoint();
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(StatusCode::kUnavailable, "cannot listen on " + where + ": " + ec.message());
  }
  impl->port = impl->acceptor.local_endpoint().port();
  impl->workers = std::make_unique<net::thread_pool>(static_cast<size_t>(o.workers));
  impl->fast = std::make_unique<net::thread_pool>(1);
  impl->Accept();
  for (int i = 0; i < 2; ++i) {
    impl->io_threads.emplace_back([p = impl.get()] {
      for (;;) {
        try {
          p->ioc.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("msg=\"HTTP I/O error\" listener={} error=\"{}\"", p->o.name, e.what());
        }
      }
    });
  }
  return std::unique_ptr<Listener>(new Listener(std::move(impl)));
}

void Listener::Stop() {
  Impl& p = *impl_;
  {
    std::unique_lock<std::mutex> lk(p.mu);
    if (p.stopped) {  // another thread is stopping it: return once it has
      p.cv.wait(lk, [&] { return p.done; });
      return;
    }
    p.stopped = true;
  }
  p.ioc.stop();
  for (std::thread& t : p.io_threads) t.join();
  beast::error_code ec;
  p.acceptor.close(ec);
  p.workers->stop();
  p.workers->join();
  p.fast->stop();
  p.fast->join();
  std::lock_guard<std::mutex> lk(p.mu);
  p.done = true;
  p.cv.notify_all();  // under the lock: a waiter may destroy the listener once it returns
}

void Listener::Wait() {
  std::unique_lock<std::mutex> lk(impl_->mu);
  impl_->cv.wait(lk, [&] { return impl_->done; });
}

Listener::Stats Listener::stats() const {
  Stats s;
  s.accepted = impl_->accepted;
  s.refused_over_limit = impl_->refused_over_limit;
  s.timed_out = impl_->timed_out;
  s.too_large = impl_->too_large;
  s.open = impl_->open;
  return s;
}

}  // namespace toposched::api::http
