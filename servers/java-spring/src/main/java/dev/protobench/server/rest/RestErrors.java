package dev.protobench.server.rest;

import dev.protobench.server.RequestPolicy;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;

/**
 * Every REST error as {"code": status, "message": "..."} with the contract's statuses; the
 * Spring MVC exceptions (404 no handler, 405 with Allow, 415, unreadable body) come through
 * ResponseEntityExceptionHandler, which keeps their headers (Allow). No internals are sent.
 */
@RestControllerAdvice
public class RestErrors extends ResponseEntityExceptionHandler {

    public static ResponseEntity<Object> body(HttpStatusCode status, String message, HttpHeaders headers) {
        HttpHeaders h = new HttpHeaders();
        if (headers != null) {
            h.putAll(headers);
        }
        h.setContentType(MediaType.APPLICATION_JSON);
        return new ResponseEntity<>(new Model.ErrorBody(status.value(), message), h, status);
    }

    @ExceptionHandler(RequestPolicy.InjectedFailure.class)
    public ResponseEntity<Object> injected(RequestPolicy.InjectedFailure e) {
        return body(HttpStatus.INTERNAL_SERVER_ERROR, "injected failure", null);
    }

    @ExceptionHandler(BenchController.BadRequest.class)
    public ResponseEntity<Object> badRequest(BenchController.BadRequest e) {
        return body(HttpStatus.BAD_REQUEST, e.getMessage(), null);
    }

    @ExceptionHandler(BenchController.NotFound.class)
    public ResponseEntity<Object> notFound(BenchController.NotFound e) {
        return body(HttpStatus.NOT_FOUND, e.getMessage(), null);
    }

    @ExceptionHandler(Exception.class)
    public ResponseEntity<Object> other(Exception e) {
        return body(HttpStatus.INTERNAL_SERVER_ERROR, "internal error", null);
    }

    @Override
    protected ResponseEntity<Object> handleHttpMessageNotReadable(HttpMessageNotReadableException ex,
            HttpHeaders headers, HttpStatusCode status, WebRequest request) {
        return body(HttpStatus.BAD_REQUEST, "malformed or invalid JSON body", headers);
    }

    @Override
    protected ResponseEntity<Object> handleExceptionInternal(Exception ex, Object ignoredBody, HttpHeaders headers,
            HttpStatusCode statusCode, WebRequest request) {
        String message = switch (statusCode.value()) {
            case 404 -> "not found";
            case 405 -> "method not allowed";
            case 415 -> "unsupported content type: use application/json";
            case 400 -> "bad request";
            default -> HttpStatus.valueOf(statusCode.value()).getReasonPhrase();
        };
        return body(statusCode, message, headers);
    }
}
